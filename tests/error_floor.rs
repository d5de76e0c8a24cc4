//! What compression promises a user debugging a failure, through the running proxy: a failing test run reaches
//! the upstream much smaller with every traceback and verdict line intact; text that only resembles a marker is
//! left alone; a traceback printed again is shown once; an API answer full of its command's own words is
//! compressed like any other; a module viewed with `cat` arrives verbatim; a diff the compressor once tripped on passes; the side
//! endpoint returns whole originals; and each output is decided once per conversation — a
//! small saving waits until the conversation already pays for the expand tool, and a verbatim decision holds.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::*;
use ctxgate::mock::MockHandle;
use ctxgate::report::measure::{Tokens, error_lines, kept_lines};
use serde_json::{Value, json};

async fn post(proxy: &Proxy, body: &Value) -> reqwest::Response {
    post_responses(proxy, body, "sk-floor").await
}

fn sent(mock: &MockHandle) -> Vec<Value> {
    turn_requests(mock)
}

/// A first turn whose one tool call (`command`) printed `output`: the body, for a conversation named `key`.
fn one_output_turn(key: &str, task: &str, command: &str, output: &str) -> Value {
    json!({
        "model": "mock-ok",
        "prompt_cache_key": key,
        "input": [
            {"role": "user", "content": task},
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": json!({"command": command}).to_string()},
            {"type": "function_call_output", "call_id": "c1", "output": output}
        ]
    })
}

/// Asserts that `received` has at most `num / den` of `original`'s `o200k_base` tokens.
fn assert_shrinks(original: &str, received: &str, (num, den): (usize, usize)) {
    let mut tokens = Tokens::new();
    let (before, after) = (tokens.count(original), tokens.count(received));
    assert!(
        after * den <= before * num,
        "only {before} -> {after} tokens"
    );
}

/// Each of `lines` is a whole line of `received`, once: a frame shared by several stacks, shown with the first.
fn assert_shown_once<S: AsRef<str>>(received: &str, lines: impl IntoIterator<Item = S>) {
    for line in lines {
        let line = line.as_ref();
        let times = received.lines().filter(|l| *l == line).count();
        assert_eq!(times, 1, "{line}:\n{received}");
    }
}

/// Each of `lines` is a whole line of `received`.
fn assert_visible<S: AsRef<str>>(received: &str, lines: impl IntoIterator<Item = S>) {
    for line in lines {
        let line = line.as_ref();
        assert!(
            received.lines().any(|l| l == line),
            "{line} missing:\n{received}"
        );
    }
}

/// Sends [`one_output_turn`] through `proxy` and returns the output as the upstream received it.
async fn output_received(
    mock: &MockHandle,
    proxy: &Proxy,
    (key, task, command): (&str, &str, &str),
    output: &str,
) -> String {
    let body = one_output_turn(key, task, command, output);
    assert_eq!(post(proxy, &body).await.status(), 200);
    output_of(sent(mock).last().unwrap(), "c1")
}

/// A pytest run of a few hundred KB: thousands of passing tests, two failures with tracebacks and assertion
/// explanations, a crash traceback in the middle, and the summary.
fn failing_pytest_log() -> String {
    let mut log = String::from(
        "<returncode>1</returncode>\n<output>\n============================= test session starts ==============================\nplatform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0\nrootdir: /testbed\ncollected 4002 items\n\n",
    );
    for i in 0..4000 {
        log.push_str(&format!(
            "tests/test_models.py::TestModel::test_case_{i:04} PASSED                       [{:3}%]\n",
            i / 40
        ));
        if i == 2000 {
            log.push_str("Traceback (most recent call last):\n  File \"/testbed/app/worker.py\", line 88, in run\n    self.step()\n  File \"/testbed/app/worker.py\", line 41, in step\n    raise RuntimeError(\"worker lost\")\nRuntimeError: worker lost\n");
        }
    }
    log.push_str(
        "\n=================================== FAILURES ===================================\n",
    );
    for name in ["test_parse_dates", "test_roundtrip"] {
        log.push_str(&format!(
            "_________________________________ {name} _________________________________\n\n    def {name}():\n        value = parse('2024-01-01')\n>       assert value.year == 2023\nE       AssertionError: assert 2024 == 2023\nE        +  where 2024 = datetime.date(2024, 1, 1).year\n\ntests/test_models.py:{}: AssertionError\n",
            name.len() * 7
        ));
    }
    log.push_str("=========================== short test summary info ============================\nFAILED tests/test_models.py::test_parse_dates - AssertionError: assert 2024 == 2023\nFAILED tests/test_models.py::test_roundtrip - AssertionError: assert 2024 == 2023\n======================== 2 failed, 4000 passed in 41.20s ========================\n</output>");
    log
}

#[tokio::test]
async fn a_failing_test_log_keeps_every_error_region_and_shrinks() {
    let (mock, proxy) = mock_and_proxy().await;
    let log = failing_pytest_log();
    assert!(log.len() > 300_000);
    let turn = ("floor-pytest", "Make the date tests pass.", "pytest tests");
    let received = output_received(&mock, &proxy, turn, &log).await;
    // Every error line, every traceback line and the verdict.
    let errors = error_lines(&log);
    assert!(errors.len() > 10);
    assert_eq!(kept_lines(&errors, &received), errors.len());
    for line in [
        "  File \"/testbed/app/worker.py\", line 41, in step",
        "    raise RuntimeError(\"worker lost\")",
        ">       assert value.year == 2023",
        "E        +  where 2024 = datetime.date(2024, 1, 1).year",
        "======================== 2 failed, 4000 passed in 41.20s ========================",
        "</output>",
    ] {
        assert!(
            received.split('\n').any(|l| l == line),
            "{line:?} not visible"
        );
    }
    assert_shrinks(&log, &received, (3, 10));
    // The same log with the old behaviour configured is sent whole.
    let mock2 = start_mock().await;
    let mut opts = ProxyOptions::new(&mock_url(&mock2));
    opts.raw.compress.failures = Some("verbatim".into());
    let verbatim = start_proxy_with(opts).await;
    assert_eq!(output_received(&mock2, &verbatim, turn, &log).await, log);
}

#[tokio::test]
async fn a_traceback_printed_again_reaches_the_upstream_once_with_every_exception_line() {
    let (mock, proxy) = mock_and_proxy().await;
    let mut log = String::from("<returncode>1</returncode>\n<output>\n");
    for i in 0..30 {
        log.push_str(&format!(
            "2024-01-01 12:00:{i:02} INFO fetching batch {i}\nTraceback (most recent call last):\n"
        ));
        for f in 0..6 {
            log.push_str(&format!(
                "  File \"/usr/lib/python3/site-packages/client/session{f}.py\", line {f}00, in send{f}\n    return self.next{f}(request, **kwargs)\n"
            ));
        }
        log.push_str(&format!(
            "client.exceptions.ConnectionTimeout: attempt {i}: read timed out\n"
        ));
    }
    log.push_str("</output>");
    let turn = (
        "floor-retries",
        "Why does the sync job keep failing?",
        "cat sync.log",
    );
    let received = output_received(&mock, &proxy, turn, &log).await;
    let errors = error_lines(&log);
    assert_eq!(kept_lines(&errors, &received), errors.len());
    for i in 0..30 {
        assert!(received.contains(&format!(
            "client.exceptions.ConnectionTimeout: attempt {i}: read timed out\n"
        )));
    }
    assert!(
        received.matches("(the same stack frames as above)").count() >= 25,
        "{received}"
    );
    assert_shrinks(&log, &received, (1, 2));
}

#[tokio::test]
async fn a_recursion_traceback_reaches_the_upstream_with_its_cycle_once_and_both_ends() {
    // Two methods calling each other until `RecursionError`: 240 copies of their two frames. Before, the capped
    // traceback kept 40 lines of cycles from its head and 120 from its tail.
    let (mock, proxy) = mock_and_proxy().await;
    let mut log = String::from(
        "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File \"/app/cli.py\", line 12, \
         in <module>\n    main()\n  File \"/app/cli.py\", line 9, in main\n    print(render(tree))\n",
    );
    for _ in 0..240 {
        log.push_str(
            "  File \"/app/render.py\", line 31, in render\n    return render_children(node)\n",
        );
        log.push_str("  File \"/app/render.py\", line 44, in render_children\n    parts.append(render(child))\n");
    }
    log.push_str("  File \"/app/render.py\", line 28, in render\n    if node.parent is node:\n");
    log.push_str(
        "RecursionError: maximum recursion depth exceeded while calling a Python object\n</output>",
    );
    let turn = ("recursion", "Why does render crash?", "python cli.py");
    let received = output_received(&mock, &proxy, turn, &log).await;
    // Every distinct line stays, in order: the entry frames, one cycle, the deepest frame, the exception.
    let mut distinct: Vec<&str> = Vec::new();
    for line in log.lines() {
        if !distinct.contains(&line) {
            distinct.push(line);
        }
    }
    let mut at = 0;
    for line in &distinct {
        let found = received[at..].find(&format!("{line}\n")).or_else(|| {
            // The last line has no newline after it.
            received[at..]
                .ends_with(line)
                .then(|| received.len() - at - line.len())
        });
        assert!(
            found.is_some(),
            "{line} missing or out of order:\n{received}"
        );
        at += found.unwrap_or(0) + line.len();
    }
    assert!(
        received.contains("(the same stack frames as above)"),
        "{received}"
    );
    assert!(
        received.matches("in render_children").count() <= 3,
        "{received}"
    );
    assert_shrinks(&log, &received, (1, 10));
}

/// A Django test run with twelve failures: each traceback is unittest's seven frames around the test's own one.
#[tokio::test]
async fn a_run_with_many_failures_reaches_the_upstream_with_the_frames_they_share_shown_once() {
    let (mock, proxy) = mock_and_proxy().await;
    let case = "/opt/conda/lib/python3.9/unittest/case.py";
    let head = [
        (60, "testPartExecutor", "yield"),
        (676, "run", "self._callTestMethod(testMethod)"),
        (633, "_callTestMethod", "method()"),
    ];
    let tail = [
        (912, "assertEqual", "assertion_func(first, second, msg=msg)"),
        (
            1118,
            "assertListEqual",
            "self.assertSequenceEqual(list1, list2, msg, seq_type=list)",
        ),
        (1100, "assertSequenceEqual", "self.fail(msg)"),
        (753, "fail", "raise self.failureException(msg)"),
    ];
    let frame = |(line, func, src): (u32, &str, &str)| {
        format!("  File \"{case}\", line {line}, in {func}\n    {src}\n")
    };
    let mut log = String::from(
        "<returncode>1</returncode>\n<output>\nCreating test database for alias 'default'...\n",
    );
    log.push_str(&".".repeat(70));
    log.push_str("F\n");
    let rule = "=".repeat(70);
    let thin = "-".repeat(70);
    let mut own = Vec::new();
    for t in 0..12 {
        let at = format!(
            "  File \"/testbed/tests/queries/tests.py\", line {}, in test_case_{t}",
            100 + t * 17
        );
        let src = format!("    self.assertEqual(list(qs), expected_{t})");
        log.push_str(&format!(
            "{rule}\nFAIL: test_case_{t} (queries.tests.QuerySetTests)\n{thin}\nTraceback (most recent call last):\n"
        ));
        head.iter().for_each(|f| log.push_str(&frame(*f)));
        log.push_str(&format!("{at}\n{src}\n"));
        tail.iter().for_each(|f| log.push_str(&frame(*f)));
        log.push_str(&format!(
            "AssertionError: Lists differ: [{t}, 2, 3] != [3, 2, {t}]\n\nFirst differing element 0:\n{t}\n3\n\n- [{t}, 2, 3]\n+ [3, 2, {t}]\n\n"
        ));
        own.push(at);
        own.push(src);
    }
    log.push_str(&format!(
        "{thin}\nRan 412 tests in 3.104s\n\nFAILED (failures=12)\n</output>"
    ));
    let turn = (
        "many-failures",
        "Fix the queryset tests",
        "./tests/runtests.py queries",
    );
    let received = output_received(&mock, &proxy, turn, &log).await;
    // Each test's own frame, each assertion message, every error line and the verdict stay.
    assert_visible(&received, &own);
    assert_visible(
        &received,
        (0..12).map(|t| format!("AssertionError: Lists differ: [{t}, 2, 3] != [3, 2, {t}]")),
    );
    assert_visible(&received, error_lines(&log));
    assert_visible(&received, ["FAILED (failures=12)"]);
    // The shared frames are shown once, with the first failure; the others point at them.
    for f in head.iter().chain(&tail) {
        let line = frame(*f);
        let first = line.lines().next().unwrap();
        assert_eq!(
            received.lines().filter(|l| *l == first).count(),
            1,
            "{first}:\n{received}"
        );
    }
    assert!(
        received.matches("(the same stack frames as above)").count() >= 22,
        "{received}"
    );
    assert_shrinks(&log, &received, (3, 5));
}

/// A Maven run with eight failing JUnit tests: each stack is JUnit's assertion frames, the test's own frame and
/// thirty frames of the runner and Surefire, the same under every test. Before, each was kept whole.
#[tokio::test]
async fn a_maven_run_with_many_failures_reaches_the_upstream_with_the_runner_frames_shown_once() {
    let (mock, proxy) = mock_and_proxy().await;
    let assert_frames = [
        "\tat org.junit.Assert.fail(Assert.java:89)",
        "\tat org.junit.Assert.failNotEquals(Assert.java:835)",
        "\tat org.junit.Assert.assertEquals(Assert.java:647)",
    ];
    let runner: Vec<String> = (0..30)
        .map(|k| {
            format!(
                "\tat org.junit.runners.ParentRunner$R{k}.evaluate(ParentRunner.java:{})",
                300 + k
            )
        })
        .collect();
    let mut log = String::from("[INFO] Running com.acme.cart.CartServiceTest\n");
    let mut own = Vec::new();
    for t in 0..8 {
        log.push_str(&format!(
            "[ERROR] testTotal{t}(com.acme.cart.CartServiceTest)  Time elapsed: 0.01 s  <<< FAILURE!\n\
             java.lang.AssertionError: expected:<{t}> but was:<{}>\n",
            t + 1
        ));
        assert_frames
            .iter()
            .for_each(|f| log.push_str(&format!("{f}\n")));
        let at = format!(
            "\tat com.acme.cart.CartServiceTest.testTotal{t}(CartServiceTest.java:{})",
            40 + t * 12
        );
        log.push_str(&format!("{at}\n"));
        runner.iter().for_each(|f| log.push_str(&format!("{f}\n")));
        log.push('\n');
        own.push(at);
    }
    log.push_str(
        "[ERROR] Tests run: 14, Failures: 8, Errors: 0, Skipped: 0\n[INFO] BUILD FAILURE\n",
    );
    let turn = ("maven-failures", "Fix the cart tests", "mvn -q test");
    let received = output_received(&mock, &proxy, turn, &log).await;
    assert_visible(&received, &own);
    assert_visible(&received, error_lines(&log));
    assert_visible(&received, ["[INFO] BUILD FAILURE"]);
    assert_shown_once(
        &received,
        assert_frames
            .iter()
            .copied()
            .chain(runner.iter().map(String::as_str)),
    );
    assert_shrinks(&log, &received, (1, 3));
}

/// An RSpec run with eight failing examples: under each, the spec's own frame and nine frames of the grader that
/// runs it, the same under every example. RSpec prints frames as `# ./lib/…:48:in …`, which read as comments:
/// the run was taken for source code and sent whole.
#[tokio::test]
async fn an_rspec_run_with_many_failures_reaches_the_upstream_with_the_runner_frames_shown_once() {
    let (mock, proxy) = mock_and_proxy().await;
    let runner: Vec<String> = (0..9)
        .map(|k| {
            format!(
                "     # ./lib/graders/runner_{k}.rb:{}:in `step_{k}'",
                20 + k
            )
        })
        .collect();
    let mut log = String::from("\nCart\n");
    for t in 0..8 {
        log.push_str(&format!(
            "  #total_{t}\n    applies coupon {t} (FAILED - {})\n",
            t + 1
        ));
    }
    log.push_str("\nFailures:\n\n");
    let mut own = Vec::new();
    for t in 0..8 {
        log.push_str(&format!(
            "  {}) Cart#total_{t} applies coupon {t}\n     Failure/Error: expect(cart.total).to eq({})\n\n       \
             expected: {}\n            got: {}\n\n",
            t + 1,
            90 + t,
            90 + t,
            100 + t
        ));
        let at = format!(
            "     # ./spec/cart_spec.rb:{}:in `block (3 levels) in <top (required)>'",
            12 + 4 * t
        );
        log.push_str(&format!("{at}\n"));
        runner.iter().for_each(|f| log.push_str(&format!("{f}\n")));
        log.push('\n');
        own.push(at);
    }
    log.push_str(
        "Finished in 0.14 seconds (files took 5.25 seconds to load)\n8 examples, 8 failures\n",
    );
    let turn = ("rspec-failures", "Fix the cart totals", "bundle exec rspec");
    let received = output_received(&mock, &proxy, turn, &log).await;
    assert_visible(&received, &own);
    assert_visible(&received, error_lines(&log));
    assert_visible(
        &received,
        ["            got: 107", "8 examples, 8 failures"],
    );
    assert_shown_once(&received, &runner);
    assert_shrinks(&log, &received, (1, 2));
}

/// A Mocha run whose passing tests are named for failures (`✓ rejects a failed job`): each such line is an error
/// line the floor keeps, but its neighbours — more passing tests — are no context for it.
#[tokio::test]
async fn a_mocha_run_keeps_passing_tests_named_for_failures_without_their_neighbours() {
    let (mock, proxy) = mock_and_proxy().await;
    let mut log = String::from("\n  Queue\n");
    let mut named = Vec::new();
    for t in 0..200 {
        let line = if t % 10 == 3 {
            format!("    ✓ moves job {t} to the failed set")
        } else {
            format!("    ✓ processes job {t} in order")
        };
        if t % 10 == 3 {
            named.push(line.clone());
        }
        log.push_str(&format!("{line}\n"));
    }
    log.push_str(
        "    1) retries a stalled job\n\n  199 passing (5s)\n  1 failing\n\n  1) Queue retries a stalled job:\n     \
         Error: Timeout of 2000ms exceeded.\n      at listOnTimeout (node:internal/timers:569:17)\n",
    );
    let turn = ("mocha-named", "Fix the stalled job retry", "npx mocha");
    let received = output_received(&mock, &proxy, turn, &log).await;
    assert_visible(&received, &named);
    assert_visible(&received, error_lines(&log));
    assert_visible(&received, ["  1 failing"]);
    let neighbours = (0..200)
        .filter(|t| t % 10 == 4 && (20..160).contains(t))
        .filter(|t| received.contains(&format!("✓ processes job {t} in order\n")))
        .count();
    // The run's head and tail show a few lines anyway; between them, none is kept for being a neighbour.
    assert_eq!(neighbours, 0, "{neighbours} neighbours kept:\n{received}");
    assert_shrinks(&log, &received, (1, 2));
}

/// `aws ec2 describe-instances`: the command's own words (`ec2`) stand in every instance's host names. Taken as
/// query terms, they made each instance's nested network bookkeeping "relevant", and nothing was offloaded.
#[tokio::test]
async fn an_api_answer_full_of_the_commands_own_words_reaches_the_upstream_compressed() {
    let (mock, proxy) = mock_and_proxy().await;
    let instances: Vec<Value> = (0..6)
        .map(|i| {
            let dns = format!("ec2-54-255-{i}-134.ap-southeast-1.compute.amazonaws.com");
            let interfaces: Vec<Value> = (0..3)
                .map(|k| {
                    json!({
                        "Association": {"IpOwnerId": "amazon", "PublicDnsName": dns, "PublicIp": format!("54.255.{i}.{k}")},
                        "Attachment": {"AttachTime": "2023-07-31T14:50:12+00:00", "AttachmentId": format!("eni-attach-0a{i}{k}"), "DeleteOnTermination": true, "DeviceIndex": k, "Status": "attached", "NetworkCardIndex": 0},
                        "Groups": [{"GroupName": "launch-wizard-1", "GroupId": format!("sg-0{i}{k}a1b2c3d4")}],
                        "PrivateIpAddresses": [{"Association": {"IpOwnerId": "amazon", "PublicDnsName": dns, "PublicIp": format!("54.255.{i}.{k}")}, "Primary": true, "PrivateDnsName": format!("ip-172-31-{i}-{k}.ap-southeast-1.compute.internal"), "PrivateIpAddress": format!("172.31.{i}.{k}")}],
                        "SourceDestCheck": true, "Status": "in-use", "SubnetId": format!("subnet-0{i}{k}9f8e7d"), "VpcId": "vpc-0c1d2e3f4a5b6c7d8", "InterfaceType": "interface"
                    })
                })
                .collect();
            json!({"Groups": [], "Instances": [{
                "InstanceId": format!("i-0260{i}bf0cf92a4ee1"), "InstanceType": "t3a.small", "PublicDnsName": dns,
                "State": {"Code": 16, "Name": "running"}, "NetworkInterfaces": interfaces
            }], "OwnerId": "232705437403", "ReservationId": format!("r-0{i}5d3c2b1a")})
        })
        .collect();
    let answer = serde_json::to_string_pretty(&json!({"Reservations": instances})).unwrap();
    let turn = (
        "aws-instances",
        "Why can't I reach the staging box?",
        "aws ec2 describe-instances",
    );
    let received = output_received(&mock, &proxy, turn, &answer).await;
    let shown: Value = serde_json::from_str(&received).unwrap();
    for i in 0..6 {
        let id = format!("i-0260{i}bf0cf92a4ee1");
        assert_eq!(
            shown["Reservations"][i]["Instances"][0]["InstanceId"], id,
            "{received}"
        );
    }
    assert_shrinks(&answer, &received, (2, 3));
}

/// A Jupyter cell's traceback as IPython prints it, in colour: every error line reaches the upstream as the exact
/// line, escapes and all; the frames and source lines between them come without their colour codes, which were
/// half the tokens.
#[tokio::test]
async fn a_coloured_notebook_traceback_reaches_the_upstream_with_its_error_lines_exact_and_no_colours()
 {
    let (mock, proxy) = mock_and_proxy().await;
    let (red, green, blue) = ("\x1b[0;31m", "\x1b[0;32m", "\x1b[0;34m");
    let reset = "\x1b[0m";
    let mut tb = format!(
        "{red}---------------------------------------------------------------------------{reset}\n{red}KeyError{reset}                                  Traceback (most recent call last)\n"
    );
    for k in 0..12 {
        tb.push_str(&format!(
            "{green}~/envs/data/lib/python3.7/site-packages/pandas/core/frame_{k}.py{reset} in {blue}get_item_{k}{reset}{blue}(self, key){reset}\n"
        ));
        for l in 0..4 {
            tb.push_str(&format!(
                "{green}   {}{reset}             {green}indexer{reset} {blue}={reset} {reset}self{reset}{blue}.{reset}columns{blue}.{reset}get_loc{blue}({reset}key{blue}){reset}\n",
                2790 + 10 * k + l
            ));
        }
        tb.push('\n');
    }
    tb.push_str(&format!("{red}KeyError{reset}: 'math_score'\n"));
    let turn = (
        "notebook-colours",
        "Why does the summary cell fail?",
        "jupyter nbconvert --execute analysis.ipynb",
    );
    let received = output_received(&mock, &proxy, turn, &tb).await;
    assert_visible(&received, error_lines(&tb));
    assert_visible(&received, [format!("{red}KeyError{reset}: 'math_score'")]);
    assert!(received.contains("~/envs/data/lib/python3.7/site-packages/pandas/core/frame_0.py in get_item_0(self, key)\n"), "{received}");
    assert!(!received.contains(green), "{received}");
    assert_shrinks(&tb, &received, (2, 3));
}

/// A raw `go test -v` run of 300 tests with varied names, as a harness that prints no exit code passes it on: the
/// one at 177 fails after printing `message` (its lines indented as Go prints them). Returns the run and the
/// failing test's verdict line.
fn go_test_run(message: &str) -> (String, String) {
    let mut log = String::new();
    let mut verdict = String::new();
    let (verbs, cases) = (
        ["Fold", "Store", "Expand", "Split", "Parse"],
        ["Unicode", "Large", "Empty", "Nested"],
    );
    for t in 0..300 {
        let name = format!("Test{}{}{t}", verbs[t % 5], cases[t * 7 % 4]);
        log.push_str(&format!("=== RUN   {name}\n"));
        if t == 177 {
            verdict = format!("--- FAIL: {name} (0.00s)");
            log.push_str(&format!("{message}{verdict}\n"));
        } else {
            log.push_str(&format!("--- PASS: {name} (0.0{}s)\n", t % 10));
        }
    }
    log.push_str("FAIL\nFAIL\tgithub.com/acme/codec\t0.412s\nFAIL\n");
    (log, verdict)
}

/// A failing test's message (`got 3, want 4`) has no error word. The run's verdict (`--- FAIL:`) now says it
/// failed, so the test's lines stay; before, it was plain lines and the message went to the marker.
#[tokio::test]
async fn a_raw_go_test_run_reaches_the_upstream_with_the_failing_tests_message() {
    let (mock, proxy) = mock_and_proxy().await;
    let (log, verdict) = go_test_run("    roundtrip_test.go:42: got 3, want 4\n");
    let turn = (
        "go-test",
        "CI is red, please look",
        "go test -v ./internal/codec",
    );
    let received = output_received(&mock, &proxy, turn, &log).await;
    assert_visible(
        &received,
        ["    roundtrip_test.go:42: got 3, want 4", verdict.as_str()],
    );
    assert_visible(&received, error_lines(&log));
    assert_shrinks(&log, &received, (1, 4));
}

/// testify prints what was expected, what came and their diff between its `Error:` line and the verdict, more
/// lines than an error line's context: the failing test's lines from its `=== RUN` line are a region.
#[tokio::test]
async fn a_go_test_failure_reaches_the_upstream_with_its_testify_diff() {
    let (mock, proxy) = mock_and_proxy().await;
    let diff = [
        "        \t            \texpected: \"a,b,c\"",
        "        \t            \tactual  : \"a,c,b\"",
        "        \t            \t",
        "        \t            \tDiff:",
        "        \t            \t--- Expected",
        "        \t            \t+++ Actual",
        "        \t            \t@@ -1 +1 @@",
        "        \t            \t-a,b,c",
        "        \t            \t+a,c,b",
    ];
    let message = format!(
        "    roundtrip_test.go:42: \n        \tError Trace:\troundtrip_test.go:42\n        \tError:      \tNot equal: \n{}\n",
        diff.join("\n")
    );
    let (log, verdict) = go_test_run(&message);
    let turn = (
        "go-testify",
        "CI is red, please look",
        "go test -v ./internal/codec",
    );
    let received = output_received(&mock, &proxy, turn, &log).await;
    assert_visible(&received, diff.iter().chain([&verdict.as_str()]));
    assert_visible(&received, error_lines(&log));
    assert_shrinks(&log, &received, (1, 4));
}

/// A Go service's log of `lines` varied lines with a nil-pointer panic at `at`, and the goroutine that panicked.
fn go_panic_log(lines: usize, at: usize) -> (String, Vec<&'static str>) {
    const MESSAGES: [&str; 5] = [
        "sync: applied batch",
        "http: GET /v1/items 200 3.1ms page",
        "cache: evicted keys",
        "db: pool stats open=4 idle=3 inuse=1 wait",
        "scheduler: next tick in 500ms, round",
    ];
    let panic = vec![
        "panic: runtime error: invalid memory address or nil pointer dereference",
        "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x6a1b2c]",
        "",
        "goroutine 34 [running]:",
        "github.com/acme/syncer/store.(*Cache).Put(0x0, {0xc00012c0a0, 0x8}, {0x8c1e40, 0xc000014190})",
        "\t/src/store/cache.go:88 +0x4c",
        "github.com/acme/syncer.(*Loop).apply(0xc0000b6000, 0xc0000c4000)",
        "\t/src/loop.go:141 +0x1b2",
        "created by github.com/acme/syncer.(*Loop).Run in goroutine 1",
        "\t/src/loop.go:90 +0x145",
    ];
    let mut log = String::from("Process exited with code 2\nOutput:\n");
    for i in 0..lines {
        log.push_str(&format!(
            "2026/12/01 10:{:02}:{:02} {} {i}\n",
            i / 60,
            i % 60,
            MESSAGES[(i * 7 + i / 3) % MESSAGES.len()]
        ));
        if i == at {
            for line in &panic {
                log.push_str(line);
                log.push('\n');
            }
        }
    }
    (log, panic)
}

#[tokio::test]
async fn a_go_panic_in_a_log_reaches_the_upstream_with_its_goroutines_frames() {
    // No frame line has an error word: before, the floor kept the `panic:` line and the frames that say where
    // (cache.go:88) went behind the marker with the log around them.
    let (mock, proxy) = mock_and_proxy().await;
    let (log, panic) = go_panic_log(300, 150);
    let turn = (
        "go-panic",
        "Why did the syncer crash?",
        "go run ./cmd/syncer",
    );
    let received = output_received(&mock, &proxy, turn, &log).await;
    let block = panic.join("\n");
    assert!(received.contains(&block), "{received}");
    assert!(!received.contains(" 200\n"), "{received}");
    assert_shrinks(&log, &received, (1, 3));
}

#[tokio::test]
async fn a_go_timeout_dump_reaches_the_upstream_with_each_distinct_stack_once() {
    // `go test` timed out: the alarm's goroutine, the one stuck on a mutex, and 120 pool workers parked on the same
    // stack with other argument values. The distinct stacks stay; of the pool, its first block (and the end of the
    // run); the rest is the marker's.
    let (mock, proxy) = mock_and_proxy().await;
    let mut dump = String::from(
        "Process exited with code 1\n=== RUN   TestSyncLoop\npanic: test timed out after 10m0s\n\trunning tests:\n\
         \t\tTestSyncLoop (10m0s)\n\ngoroutine 412 [running]:\ntesting.(*M).startAlarm.func1()\n\
         \t/usr/local/go/src/testing/testing.go:2366 +0x385\ncreated by time.goFunc\n\
         \t/usr/local/go/src/time/sleep.go:177 +0x2d\n\n",
    );
    let mutex = "goroutine 7 [sync.Mutex.Lock, 9 minutes]:\nsync.(*Mutex).lockSlow(0xc0001a2010)\n\
                 \t/usr/local/go/src/sync/mutex.go:173 +0x15d\n\
                 github.com/acme/syncer/store.(*Cache).Put(0xc0001a2000, {0xc00012c0a0, 0x8})\n\
                 \t/src/store/cache.go:88 +0x4c\n";
    dump.push_str(mutex);
    dump.push('\n');
    for g in 0..120 {
        dump.push_str(&format!(
            "goroutine {} [select, {} minutes]:\ngithub.com/acme/syncer/worker.(*Pool).run(0xc0000{:05x}, {})\n\
             \t/src/worker/pool.go:62 +0x1c5\ncreated by github.com/acme/syncer/worker.NewPool in goroutine 1\n\
             \t/src/worker/pool.go:40 +0x11e\n\n",
            g + 20,
            8 + g % 2,
            g * 4099,
            g % 64
        ));
    }
    dump.push_str("FAIL\tgithub.com/acme/syncer\t600.012s\nFAIL\n");
    let turn = ("go-timeout", "Why does the test hang?", "go test ./...");
    let received = output_received(&mock, &proxy, turn, &dump).await;
    assert!(received.contains(mutex), "{received}");
    assert!(
        received.contains("goroutine 20 [select, 8 minutes]:\n"),
        "{received}"
    );
    // The pool's first block, and the few the run's last 30 lines hold (the end of a failing run stays).
    assert!(
        received.matches("worker.(*Pool).run(").count() <= 6,
        "{received}"
    );
    assert!(!received.contains("goroutine 80 ["), "{received}");
    assert!(received.contains("FAIL\tgithub.com/acme/syncer\t600.012s"));
    assert_shrinks(&dump, &received, (1, 4));
}

#[tokio::test]
async fn a_jest_failure_reaches_the_upstream_with_the_line_its_code_frame_points_at() {
    // A failing suite among 200 passing ones: its code frame (`> 41 |` and the caret) has no error word and sits
    // after a blank line, where an error line's context stops; before, it went behind the marker.
    let (mock, proxy) = mock_and_proxy().await;
    // Suites of varied names, as a project's are (not one shape the uniform-lines rule would single the failure
    // out of).
    const DIRS: [&str; 7] = [
        "components",
        "utils",
        "api",
        "hooks",
        "store",
        "pages",
        "lib",
    ];
    const NAMES: [&str; 9] = [
        "Button", "date", "client", "useCart", "orders", "Checkout", "format", "auth", "Modal",
    ];
    let mut run = String::from("Process exited with code 1\n");
    for i in 0..200 {
        run.push_str(&format!(
            "PASS src/{}/{}{i}.test.ts ({}.{i:03} s)\n",
            DIRS[i % 7],
            NAMES[i % 9],
            i % 10
        ));
        if i == 90 {
            run.push_str(
                "FAIL src/__tests__/cart.test.ts\n  ● Cart › applies the discount\n\n    expect(received).toBe(expected) \
                 // Object.is equality\n\n    Expected: 90\n    Received: 100\n\n      40 |   const cart = makeCart();\n    \
                 > 41 |   expect(cart.total()).toBe(90);\n         |                        ^\n      42 | });\n\n      \
                 at Object.<anonymous> (src/__tests__/cart.test.ts:41:24)\n\n",
            );
        }
    }
    run.push_str("Test Suites: 1 failed, 200 passed, 201 total\nTests:       1 failed, 1400 passed, 1401 total\n");
    let turn = ("jest", "Why does the cart test fail?", "npx jest");
    let received = output_received(&mock, &proxy, turn, &run).await;
    assert_visible(
        &received,
        [
            "    > 41 |   expect(cart.total()).toBe(90);",
            "         |                        ^",
            "  ● Cart › applies the discount",
            "    Expected: 90",
            "    Received: 100",
            "      at Object.<anonymous> (src/__tests__/cart.test.ts:41:24)",
        ],
    );
    assert!(!received.contains("150.test.ts"), "{received}");
    assert_shrinks(&run, &received, (1, 3));
}

/// Jest prints each failure as a `●` block: the matcher, `Expected:`/`Received:` (no error word in either), the code
/// frame, the `at` lines. A `test.each` table failing at one `expect` prints the same frame in every block: each
/// row's values reach the upstream, the frame once.
#[tokio::test]
async fn a_jest_table_failing_at_one_expect_reaches_the_upstream_with_every_rows_values_and_the_frame_once()
 {
    let (mock, proxy) = mock_and_proxy().await;
    let mut run = String::from("Process exited with code 1\nFAIL src/price.test.ts\n");
    let mut values = Vec::new();
    for row in 0..24 {
        let (input, expected, received) =
            (format!("{row}.005"), format!("{row}.01"), format!("{row}"));
        values.push(format!("    Expected: {expected}"));
        values.push(format!("    Received: {received}"));
        run.push_str(&format!(
            "  ● price › rounds {input} to 2 places\n\n    expect(received).toBe(expected) // Object.is equality\n\n    \
             Expected: {expected}\n    Received: {received}\n\n      12 |   [2.675, 2.68],\n      13 | ])('rounds %p to 2 \
             places', (input, expected) => {{\n    > 14 |   expect(round(input)).toBe(expected);\n         |                \
                    ^\n      15 | }});\n      16 |\n\n      at Object.<anonymous> (src/price.test.ts:14:24)\n\n"
        ));
    }
    run.push_str("Test Suites: 1 failed, 1 total\nTests:       24 failed, 3 passed, 27 total\nTime:        1.203 s\n");
    let turn = (
        "jest-each",
        "Fix the rounding",
        "npx jest src/price.test.ts",
    );
    let received = output_received(&mock, &proxy, turn, &run).await;
    assert_visible(&received, &values);
    assert_visible(&received, error_lines(&run));
    assert_shown_once(
        &received,
        [
            "    > 14 |   expect(round(input)).toBe(expected);",
            "      13 | ])('rounds %p to 2 places', (input, expected) => {",
        ],
    );
    assert!(
        received.contains("(the same code frame as above)"),
        "{received}"
    );
    assert_shrinks(&run, &received, (3, 4));
}

#[tokio::test]
async fn rspec_failures_reach_the_upstream_with_each_examples_name_values_and_location() {
    // Twelve failures listed after 300 examples: only `Failure/Error` has an error word, and the values under it
    // stand after a blank line. Before, ten of the twelve blocks showed that line alone.
    let (mock, proxy) = mock_and_proxy().await;
    const SPECS: [&str; 5] = ["Order", "Cart", "User", "Mailer", "Coupon"];
    const WORDS: [&str; 4] = [
        "returns the order",
        "validates the email",
        "applies coupons",
        "paginates",
    ];
    let mut run = String::from("Process exited with code 1\n");
    for i in 0..300 {
        run.push_str(&format!("{}Spec {} #{i}\n", SPECS[i % 5], WORDS[i % 4]));
    }
    run.push_str("\nFailures:\n\n");
    for k in 1..=12 {
        run.push_str(&format!(
            "  {k}) Cart#total applies coupon {k}\n     Failure/Error: expect(cart.total).to eq({})\n\n       \
             expected: {}\n            got: {}\n\n       (compared using ==)\n     # \
             ./spec/models/cart_spec.rb:{}:in `block (3 levels) in <top (required)>'\n\n",
            k * 10,
            k * 10,
            k * 10 + 7,
            40 + k
        ));
    }
    run.push_str(
        "Finished in 12.4 seconds (files took 2.1 seconds to load)\n300 examples, 12 failures\n",
    );
    let turn = ("rspec", "Why do the cart specs fail?", "bundle exec rspec");
    let received = output_received(&mock, &proxy, turn, &run).await;
    for k in 1..=12 {
        assert_visible(
            &received,
            [
                format!("  {k}) Cart#total applies coupon {k}"),
                format!("       expected: {}", k * 10),
                format!("            got: {}", k * 10 + 7),
            ],
        );
        assert!(received.contains(&format!("cart_spec.rb:{}:in", 40 + k)));
    }
    assert!(!received.contains("#150\n"), "{received}");
    assert_shrinks(&run, &received, (1, 2));
}

#[tokio::test]
async fn a_sanitizer_report_reaches_the_upstream_through_its_summary() {
    // A data race among 300 test lines: the racing access, then (after blank lines) the other thread's access and
    // where that thread was created, then the summary. Before, the context of the report's first line stopped at
    // its first blank line and the rest went behind the marker.
    let (mock, proxy) = mock_and_proxy().await;
    const SUITES: [&str; 6] = ["Parser", "Lexer", "Arena", "Table", "Codec", "Ring"];
    let report = "==================\nWARNING: ThreadSanitizer: data race (pid=4242)\n  \
                  Write of size 8 at 0x7b0400000010 by thread T2:\n    #0 ring_push /src/ring.c:51:14 (ring_test+0x4c1d2)\n    \
                  #1 producer /src/ring_test.c:30:5 (ring_test+0x4c9a0)\n\n  \
                  Previous read of size 8 at 0x7b0400000010 by thread T1:\n    #0 ring_pop /src/ring.c:88:12 \
                  (ring_test+0x4c3b1)\n    #1 consumer /src/ring_test.c:44:9 (ring_test+0x4ca51)\n\n  \
                  Location is heap block of size 64 at 0x7b0400000000 allocated by main thread:\n    #0 malloc <null> \
                  (libtsan.so.2+0x3ebf8)\n    #1 ring_new /src/ring.c:22:19 (ring_test+0x4c0a1)\n\n  \
                  Thread T2 (tid=4245, running) created by main thread at:\n    #0 pthread_create <null> \
                  (libtsan.so.2+0x5f0a6)\n    #1 main /src/ring_test.c:61:3 (ring_test+0x4cb10)\n\n\
                  SUMMARY: ThreadSanitizer: data race /src/ring.c:51:14 in ring_push\n==================\n";
    let mut log = String::from("Process exited with code 66\n");
    for i in 0..300 {
        log.push_str(&format!(
            "[ RUN      ] {}Test.Case{i}\n[       OK ] {}Test.Case{i} ({} ms)\n",
            SUITES[i % 6],
            SUITES[i % 6],
            i % 7
        ));
        if i == 150 {
            log.push_str(report);
        }
    }
    let turn = ("tsan", "Make the build green.", "ctest --output-on-failure");
    let received = output_received(&mock, &proxy, turn, &log).await;
    assert_visible(
        &received,
        report
            .lines()
            .filter(|l| l.starts_with(' ') || l.starts_with("SUMMARY")),
    );
    assert!(!received.contains("Case220 "), "{received}");
    assert_shrinks(&log, &received, (1, 3));
}

#[tokio::test]
async fn an_exception_message_of_several_lines_reaches_the_upstream_with_its_traceback() {
    let (mock, proxy) = mock_and_proxy().await;
    let mut log = String::from("<returncode>1</returncode>\n<output>\n");
    for i in 0..300 {
        log.push_str(&format!("loading record {i} of 600 from users.csv\n"));
    }
    let message = "pydantic_core._pydantic_core.ValidationError: 2 validation errors for User\nage\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing, input_value='forty', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.5/v/int_parsing\nemail\n  Field required [type=missing, input_value={'name': 'Ada', 'age': 'forty'}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.5/v/missing\n";
    log.push_str("Traceback (most recent call last):\n  File \"/app/load.py\", line 31, in <module>\n    users.append(User(**row))\n  File \"/usr/lib/python3/site-packages/pydantic/main.py\", line 164, in __init__\n    __pydantic_self__.__pydantic_validator__.validate_python(data, self_instance=__pydantic_self__)\n");
    log.push_str(message);
    for i in 0..300 {
        log.push_str(&format!(
            "2024-01-01 12:00:{:02} INFO cleanup step {i}\n",
            i % 60
        ));
    }
    log.push_str("</output>");
    let turn = (
        "floor-pydantic",
        "Why does the import fail?",
        "python load.py",
    );
    let received = output_received(&mock, &proxy, turn, &log).await;
    assert!(received.contains(message), "{received}");
    assert_shrinks(&log, &received, (1, 3));
}

#[tokio::test]
async fn a_table_with_failed_rows_reaches_the_upstream_with_each_row_and_no_neighbours() {
    let (mock, proxy) = mock_and_proxy().await;
    let mut csv = String::from("id,created_at,customer,amount,status\n");
    let mut failed = Vec::new();
    for i in 0..400 {
        let status = if i % 13 == 5 { "failed" } else { "paid" };
        let row = format!(
            "{},2024-01-{:02}T10:00:00Z,customer{i},{}.50,{status}",
            5000 + i,
            1 + i % 28,
            i * 3
        );
        if status == "failed" {
            failed.push(row.clone());
        }
        csv.push_str(&row);
        csv.push('\n');
    }
    let turn = ("floor-table", "Which orders failed?", "cat orders.csv");
    let received = output_received(&mock, &proxy, turn, &csv).await;
    for row in &failed {
        assert!(
            received.lines().any(|l| l == row),
            "{row} missing:\n{received}"
        );
    }
    assert_shrinks(&csv, &received, (1, 3));
}

#[tokio::test]
async fn a_python_module_viewed_with_cat_reaches_the_upstream_verbatim() {
    // Source stays verbatim: the agent edits against what it sees. A module of docstrings, comments and
    // assignments used to pass for plain lines, and most of it went behind a marker.
    let (mock, proxy) = mock_and_proxy().await;
    let mut module = String::from(
        "<returncode>0</returncode>\n<output>\n\"\"\"Helpers for the sync client.\"\"\"\n\nimport json\nimport re\n\n",
    );
    for i in 0..40 {
        module.push_str(&format!(
            "# Retry policy for endpoint {i}.\nRETRIES_{i} = {i}\nBACKOFF_{i} = {i}.5\n\n\ndef fetch_{i}(session, url):\n    \"\"\"\n    Fetch `url` with the policy of endpoint {i}.\n\n    Retries on connection resets, gives up after RETRIES_{i} attempts.\n    \"\"\"\n    answer = session.get(url, timeout=BACKOFF_{i})\n    return json.loads(answer.text)\n\n"
        ));
    }
    module.push_str("</output>");
    let turn = ("source-view", "Fix the retry policy.", "cat sync/client.py");
    let received = output_received(&mock, &proxy, turn, &module).await;
    assert_eq!(received, module);
}

#[tokio::test]
async fn a_page_fetched_with_curl_is_compressed_and_the_same_file_viewed_with_cat_is_not() {
    // A whole HTML document whose inline stylesheet reads as source: fetched, it is what a server sent.
    let (mock, proxy) = mock_and_proxy().await;
    let mut page =
        String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<title>Docs</title>\n<style>\n");
    for i in 0..150 {
        page.push_str(&format!(
            ".sidebar-item-{i} {{\n  margin: {i}px;\n  padding: 4px;\n}}\n"
        ));
    }
    page.push_str("</style>\n</head>\n<body>\n<h1>Retry policy</h1>\n</body>\n</html>\n");
    let fetch = (
        "page-fetch",
        "Read the docs.",
        "curl -s https://docs.example.org/retry.html",
    );
    let received = output_received(&mock, &proxy, fetch, &page).await;
    assert!(received.contains("<<ctxzip:"), "{received}");
    assert_shrinks(&page, &received, (1, 3));
    let view = ("page-view", "Fix the page.", "cat site/retry.html");
    assert_eq!(output_received(&mock, &proxy, view, &page).await, page);
}

#[tokio::test]
async fn a_range_of_a_source_file_reaches_the_upstream_verbatim_even_when_it_reads_as_prose() {
    // `sed -n '501,600p' model.py` cut out of one long docstring: its text reads like documentation, and only the
    // call says it is source. The same text printed by a program is compressed.
    let (mock, proxy) = mock_and_proxy().await;
    let mut doc = String::from("<returncode>0</returncode>\n<output>\n");
    for i in 0..120 {
        doc.push_str(&format!(
            "    The parameter l1_ratio_{i} corresponds to alpha in the glmnet R package, while alpha\n    corresponds to the lambda parameter in glmnet; see the user guide, section {i}.\n\n"
        ));
    }
    doc.push_str("</output>");
    let view = (
        "source-range",
        "Fix the docs.",
        "sed -n '501,860p' sklearn/linear_model/model.py",
    );
    assert_eq!(output_received(&mock, &proxy, view, &doc).await, doc);
    let run = ("source-range-run", "Fix the docs.", "python print_docs.py");
    assert_ne!(output_received(&mock, &proxy, run, &doc).await, doc);
    // A tool that reads files (Codex's `read_file`, an MCP server's `read_text_file`) names the file itself.
    let read = |tool: &str, path: &str| {
        json!({
            "model": "mock-ok",
            "prompt_cache_key": format!("read-{tool}-{path}"),
            "input": [
                {"role": "user", "content": "Fix the docs."},
                {"type": "function_call", "call_id": "c1", "name": tool, "arguments": json!({"file_path": path, "offset": 501}).to_string()},
                {"type": "function_call_output", "call_id": "c1", "output": &doc}
            ]
        })
    };
    for (tool, path, verbatim) in [
        ("read_file", "sklearn/linear_model/model.py", true),
        ("read_file", "docs/glmnet.txt", false),
        ("read_dir", "sklearn/linear_model/model.py", false),
    ] {
        assert_eq!(post(&proxy, &read(tool, path)).await.status(), 200);
        let received = output_of(sent(&mock).last().unwrap(), "c1");
        assert_eq!(received == doc, verbatim, "{tool} {path}");
    }
}

#[tokio::test]
async fn a_diff_whose_hunk_has_no_file_header_is_compressed_not_dropped() {
    // The compress fuzz target found it: a mangled `diff --git` line and no `+++` header made the diff compressor
    // index a table of files with none in it, and the panic took the request with it.
    let (mock, proxy) = mock_and_proxy().await;
    let mut diff = String::from(
        "<returncode>0</returncode>\n<output>\ndiff -oooo-git a/m.py b/m.py\n--- b/m.py\n@@ -1,200 +1,202 @@\n",
    );
    for i in 0..200 {
        diff.push_str(&format!(
            " unchanged line {i} of the module body, long enough to count\n"
        ));
    }
    diff.push_str("+added one\n+added two\n</output>");
    let turn = ("floor-diff", "Show me the change.", "git diff");
    let received = output_received(&mock, &proxy, turn, &diff).await;
    assert!(received.contains("+added one\n+added two\n"), "{received}");
    assert!(received.len() < diff.len());
}

#[tokio::test]
async fn text_that_resembles_a_marker_reaches_the_upstream_unchanged() {
    let (mock, proxy) = mock_and_proxy().await;
    let body = r#"{"model":"mock-ok","input":[{"role":"user","content":"What does <<ctxzip:zzzz>> or <<ctxzip:abcdef>> mean?"}],"tools":[{"type":"function","name":"shell","parameters":{}}]}"#;
    assert_eq!(forwarded(&mock, &proxy, body).await, body.as_bytes());
}

/// Posts `body` as it stands (not re-encoded) and returns the bytes the upstream got.
async fn forwarded(mock: &MockHandle, proxy: &Proxy, body: &str) -> bytes::Bytes {
    mock.state.clear();
    let resp = client()
        .post(proxy.v1("/responses"))
        .header("authorization", "Bearer sk-floor")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let received = mock.state.received();
    assert_eq!(received.len(), 1);
    received[0].body.clone()
}

#[tokio::test]
async fn the_side_endpoint_returns_the_whole_original() {
    let (_mock, proxy) = mock_and_proxy().await;
    let log = failing_pytest_log();
    let body = one_output_turn("floor-side", "Run the tests.", "pytest", &log);
    assert_eq!(post(&proxy, &body).await.status(), 200);
    let hash = ctxgate::ctxzip::hash_of(&log);
    let get = |q: &'static str| {
        client()
            .get(format!("{}{q}", proxy.v1(&format!("/ctxzip/{hash}"))))
            .header("authorization", "Bearer sk-floor")
            .send()
    };
    let whole = get("").await.unwrap().text().await.unwrap();
    assert_eq!(whole, log);
    let window = get("?limit=1000").await.unwrap().text().await.unwrap();
    assert!(window.len() < 2000 && window.starts_with("<returncode>1</returncode>"));
}

#[tokio::test]
async fn an_original_gone_from_the_store_is_stored_again_when_its_form_is_reused() {
    let mock = start_mock().await;
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("lost.redb");
    let start = |path: std::path::PathBuf| {
        let mut opts = ProxyOptions::new(&mock_url(&mock));
        opts.store_path = Some(path);
        start_proxy_with(opts)
    };
    let log = passing_log("lost", 2000);
    let body = json!({"model": "mock-ok", "prompt_cache_key": "lost", "input": [
        {"role": "user", "content": "Build it."},
        {"type": "function_call", "call_id": "a", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": log},
    ]});
    let proxy = start(store_path.clone()).await;
    assert_eq!(post(&proxy, &body).await.status(), 200);
    proxy.stop().await;
    // The original is lost (evicted, or deleted by an operator) while the conversation's form of it is kept.
    let hash = ctxgate::ctxzip::hash_of(&log);
    let tenant = ctxgate::proxy::auth::Tenant::from_credential(b"Bearer sk-floor");
    {
        let store = ctxgate::store::redb::RedbStore::open(&store_path).unwrap();
        use ctxgate::store::{Namespace, Store};
        assert!(
            store
                .delete(Namespace::Originals, tenant.as_str(), &hash)
                .await
                .unwrap()
        );
        store.close().await.unwrap();
    }
    // A proxy with nothing in memory reuses the form (the same bytes upstream) and stores the original again,
    // so the marker it sends can still be expanded.
    let again = start(store_path).await;
    assert_eq!(post(&again, &body).await.status(), 200);
    let requests = sent(&mock);
    assert_eq!(requests[1]["input"], requests[0]["input"]);
    assert!(ctxgate::ctxzip::contains_marker(&output_of(
        &requests[1],
        "a"
    )));
    let whole = client()
        .get(again.v1(&format!("/ctxzip/{hash}")))
        .header("authorization", "Bearer sk-floor")
        .send()
        .await
        .unwrap();
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.text().await.unwrap(), log);
}

/// About `tokens` estimated tokens of a passing log that compresses well.
/// A passing log of `lines` lines of 80 characters (20 estimated tokens each), whatever the tag.
fn passing_log(tag: &str, lines: usize) -> String {
    (0..lines)
        .map(|i| {
            let line = format!(
                "[{tag}] step {i:05} finished in 0.{:03}s, cache warm",
                i % 997
            );
            format!("{line:<79}\n")
        })
        .collect()
}

/// Lines of a [`passing_log`] that saves about 180 estimated tokens: less than a conversation's first marker
/// costs (`min_saved_tokens`, 224), more than half of it, so two such outputs together pay for it.
const SMALL_LOG: usize = 28;

fn shell_call(id: &str) -> Value {
    json!({"type": "function_call", "call_id": id, "name": "shell", "arguments": "{}"})
}

fn shell_output(id: &str, text: &str) -> Value {
    json!({"type": "function_call_output", "call_id": id, "output": text})
}

fn threshold_turn(input: &[Value]) -> Value {
    json!({"model": "mock-ok", "prompt_cache_key": "threshold", "input": input})
}

#[tokio::test]
async fn small_savings_wait_for_the_first_marker_and_go_with_it() {
    let mock = start_mock().await;
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("threshold.redb");
    let mut opts = ProxyOptions::new(&mock_url(&mock));
    opts.store_path = Some(store_path.clone());
    let proxy = start_proxy_with(opts).await;
    // Saves less than the first marker's cost (min_saved_tokens).
    let small = passing_log("small", SMALL_LOG);
    let big = passing_log("big", 2000);
    let second_small = passing_log("again", SMALL_LOG);
    let mut input = vec![
        json!({"role": "user", "content": "Build it."}),
        shell_call("a"),
        shell_output("a", &small),
    ];
    assert_eq!(post(&proxy, &threshold_turn(&input)).await.status(), 200);
    input.extend([shell_call("b"), shell_output("b", &big)]);
    assert_eq!(post(&proxy, &threshold_turn(&input)).await.status(), 200);
    input.extend([shell_call("c"), shell_output("c", &second_small)]);
    assert_eq!(post(&proxy, &threshold_turn(&input)).await.status(), 200);
    let requests = sent(&mock);
    assert_eq!(requests.len(), 3);
    // Turn 1: alone, the small output cannot pay for the tool: verbatim, and no tool offered.
    assert_eq!(output_of(&requests[0], "a"), small);
    assert!(requests[0].get("tools").is_none());
    // Turn 2: the big output pays for the first marker. It changes the request's head, so the provider reads the
    // whole prefix again anyway: the small output that waited for it goes compressed with it.
    for id in ["a", "b"] {
        assert!(
            ctxgate::ctxzip::contains_marker(&output_of(&requests[1], id)),
            "{id}"
        );
    }
    assert!(requests[1].get("tools").is_some());
    // Turn 3: the conversation carries the tool now, so a small saving pays for its own marker; the earlier
    // items keep the bytes of turn 2 (prefix stability).
    assert_eq!(output_of(&requests[2], "a"), output_of(&requests[1], "a"));
    assert_eq!(output_of(&requests[2], "b"), output_of(&requests[1], "b"));
    assert!(ctxgate::ctxzip::contains_marker(&output_of(
        &requests[2],
        "c"
    )));
    // The decisions survive a restart: a new proxy on the same store sends turn 3 the same way.
    proxy.stop().await;
    let mut opts = ProxyOptions::new(&mock_url(&mock));
    opts.store_path = Some(store_path);
    let again = start_proxy_with(opts).await;
    assert_eq!(post(&again, &threshold_turn(&input)).await.status(), 200);
    let after_restart = sent(&mock);
    assert_eq!(after_restart[3]["input"], requests[2]["input"]);
}

#[tokio::test]
async fn small_savings_add_up_to_the_first_marker_even_across_a_restart() {
    for restart in [false, true] {
        let mock = start_mock().await;
        let dir = tempfile::tempdir().unwrap();
        let store_path = dir.path().join("add-up.redb");
        let start = || {
            let mut opts = ProxyOptions::new(&mock_url(&mock));
            opts.store_path = Some(store_path.clone());
            start_proxy_with(opts)
        };
        let mut proxy = start().await;
        // Each saves less than the first marker's cost alone; two together pay (see SMALL_LOG).
        let first = passing_log("first", SMALL_LOG);
        let second = passing_log("second", SMALL_LOG);
        let third = passing_log("third", SMALL_LOG);
        let mut input = vec![
            json!({"role": "user", "content": "Build it."}),
            shell_call("a"),
            shell_output("a", &first),
        ];
        let resp = post(&proxy, &threshold_turn(&input)).await;
        assert_eq!(resp.headers()["x-ctxgate-compressed"], "0");
        if restart {
            // The waiting decision is read back from the store, not from the stopped proxy's memory.
            proxy.stop().await;
            proxy = start().await;
        }
        input.extend([shell_call("b"), shell_output("b", &second)]);
        let resp = post(&proxy, &threshold_turn(&input)).await;
        assert_eq!(
            resp.headers()["x-ctxgate-compressed"],
            "2",
            "restart: {restart}"
        );
        input.extend([shell_call("c"), shell_output("c", &third)]);
        let resp = post(&proxy, &threshold_turn(&input)).await;
        assert_eq!(
            resp.headers()["x-ctxgate-compressed"],
            "3",
            "restart: {restart}"
        );
        let requests = sent(&mock);
        assert_eq!(output_of(&requests[0], "a"), first);
        assert!(requests[0].get("tools").is_none());
        for id in ["a", "b"] {
            assert!(ctxgate::ctxzip::contains_marker(&output_of(
                &requests[1],
                id
            )));
            assert_eq!(output_of(&requests[2], id), output_of(&requests[1], id));
        }
        assert!(requests[1].get("tools").is_some());
        assert!(ctxgate::ctxzip::contains_marker(&output_of(
            &requests[2],
            "c"
        )));
        proxy.stop().await;
    }
}

#[tokio::test]
async fn waiting_savings_must_also_pay_for_the_cached_prefix_they_make_the_provider_read_again() {
    let mock = start_mock().await;
    // The task makes a long head, which the default offers the tool from the first turn: here it comes with the
    // first marker.
    let mut opts = ProxyOptions::new(&mock_url(&mock));
    opts.raw.expand.eager_min_head_tokens = Some(0);
    let proxy = start_proxy_with(opts).await;
    // A task of about 3,600 estimated tokens: the first marker must save a tenth of the prefix before it.
    let task = "Rule: keep every test green. ".repeat(500);
    let mut input = vec![json!({"role": "user", "content": task})];
    let mut compressed = Vec::new();
    for (id, tag) in [("a", "first"), ("b", "second"), ("c", "third")] {
        input.extend([
            shell_call(id),
            shell_output(id, &passing_log(tag, SMALL_LOG)),
        ]);
        let resp = post(&proxy, &threshold_turn(&input)).await;
        compressed.push(
            resp.headers()["x-ctxgate-compressed"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
    }
    // Two outputs save about 360 tokens, under a tenth of the ~4,200 before the second: they wait. The third
    // brings the sum to about 540, over a tenth of the ~4,800 before it: all three go compressed together.
    assert_eq!(compressed, ["0", "0", "3"]);
    let requests = sent(&mock);
    assert!(requests[1].get("tools").is_none());
    assert_eq!(
        output_of(&requests[1], "b"),
        passing_log("second", SMALL_LOG)
    );
    proxy.stop().await;
}

/// A long head whose turns choose the model's tools for it (`required`, a named tool) is not offered the expand
/// tool before a marker: with nothing to expand it would be a decoy, or uncallable.
#[tokio::test]
async fn a_long_head_with_its_tools_chosen_for_the_model_waits_for_a_marker() {
    let (mock, proxy) = mock_and_proxy().await;
    let system = "Run one shell command per turn and explain why.\n".repeat(170);
    let input = json!([
        {"role": "developer", "content": system},
        {"role": "user", "content": "Build it."}
    ]);
    for choice in [
        json!("required"),
        json!({"type": "function", "name": "shell"}),
        json!("auto"),
    ] {
        let body = json!({"model": "mock-ok", "prompt_cache_key": "chosen", "input": input,
                          "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
                          "tool_choice": choice});
        assert_eq!(post(&proxy, &body).await.status(), 200);
    }
    let requests = sent(&mock);
    let offered: Vec<bool> = requests
        .iter()
        .map(|r| r["tools"].to_string().contains("context_expand"))
        .collect();
    assert_eq!(offered, [false, false, true]);
}

#[tokio::test]
async fn a_conversation_with_a_long_head_is_offered_the_tool_from_its_first_turn() {
    // The shipped default (`eager_min_head_tokens` 1024).
    let (mock, proxy) = mock_and_proxy().await;
    // A system prompt of about 2,000 estimated tokens: the head every turn of this conversation repeats.
    let system = "Run one shell command per turn and explain why.\n".repeat(170);
    let small = passing_log("small", SMALL_LOG);
    let mut input = vec![
        json!({"role": "developer", "content": system}),
        json!({"role": "user", "content": "Build it."}),
    ];
    let turn = |input: &Vec<Value>| json!({"model": "mock-ok", "prompt_cache_key": "eager", "instructions": "Be brief.", "input": input});
    let first = post(&proxy, &turn(&input)).await;
    assert_eq!(first.status(), 200);
    // The client's view of the answer does not show the tool it never sent.
    let answer: Value = first.json().await.unwrap();
    assert!(!answer.to_string().contains("context_expand"));
    input.extend([shell_call("a"), shell_output("a", &small)]);
    assert_eq!(post(&proxy, &turn(&input)).await.status(), 200);
    input.extend([
        shell_call("b"),
        shell_output("b", &passing_log("again", SMALL_LOG)),
    ]);
    assert_eq!(post(&proxy, &turn(&input)).await.status(), 200);
    let requests = sent(&mock);
    assert_eq!(requests.len(), 3);
    // Offered on the first turn, before any marker, and the head is the same bytes on every turn after it.
    let tools = requests[0]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "context_expand");
    assert!(
        requests[0]["instructions"]
            .as_str()
            .unwrap()
            .starts_with("Be brief.")
    );
    for later in &requests[1..] {
        assert_eq!(later["tools"].to_string(), requests[0]["tools"].to_string());
        assert_eq!(later["instructions"], requests[0]["instructions"]);
    }
    // The tool is paid for: a small saving, which alone waits for the first marker's threshold, goes behind a
    // marker at first sight, and keeps that form on the next turn.
    assert!(ctxgate::ctxzip::contains_marker(&output_of(
        &requests[1],
        "a"
    )));
    assert_eq!(output_of(&requests[2], "a"), output_of(&requests[1], "a"));
    let items = |r: &Value| r["input"].as_array().unwrap()[..4].to_vec();
    assert_eq!(items(&requests[2]), items(&requests[1]));
    // A short conversation on the same proxy is left as the client sent it.
    let short = json!({"model": "mock-ok", "input": [{"role": "user", "content": "Hi."}]});
    assert_eq!(post(&proxy, &short).await.status(), 200);
    assert!(sent(&mock)[3].get("tools").is_none());
    // A turn continuing the first response on the server keeps the tool, though its own input is short.
    let id = answer["id"].as_str().unwrap();
    let next = json!({"model": "mock-ok", "previous_response_id": id, "input": [{"role": "user", "content": "And?"}]});
    assert_eq!(post(&proxy, &next).await.status(), 200);
    assert!(
        sent(&mock)[4]["tools"]
            .to_string()
            .contains("context_expand")
    );
}

#[tokio::test]
async fn a_first_marker_late_in_a_long_session_must_be_worth_the_cached_prefix() {
    let (mock, proxy) = mock_and_proxy().await;
    // A long session of small outputs (each under the compression threshold), then one output whose saving
    // (about 3,600 tokens) beats min_saved_tokens but not 10 % of the ~60,000 tokens before it.
    let call = |id: &str| json!({"type": "function_call", "call_id": id, "name": "shell", "arguments": "{}"});
    let out = |id: &str, text: &str| json!({"type": "function_call_output", "call_id": id, "output": text});
    let mut long = vec![json!({"role": "user", "content": "Build it."})];
    for i in 0..150 {
        let id = format!("s{i}");
        long.extend([
            call(&id),
            out(
                &id,
                &format!("{i:04} {}\n", "small distinct output ".repeat(75)),
            ),
        ]);
    }
    let late = passing_log("late", 200);
    long.extend([call("late"), out("late", &late)]);
    let turn = |key: &str, input: &Vec<Value>| json!({"model": "mock-ok", "prompt_cache_key": key, "input": input});
    let mut before = long.clone();
    before.truncate(long.len() - 2);
    assert_eq!(post(&proxy, &turn("long", &before)).await.status(), 200);
    assert_eq!(post(&proxy, &turn("long", &long)).await.status(), 200);
    // Early in a session the same output pays for the first marker.
    let short = vec![
        json!({"role": "user", "content": "Build it."}),
        call("late"),
        out("late", &late),
    ];
    assert_eq!(post(&proxy, &turn("short", &short)).await.status(), 200);
    let requests = sent(&mock);
    assert_eq!(output_of(&requests[1], "late"), late);
    assert!(requests[1].get("tools").is_none());
    assert!(ctxgate::ctxzip::contains_marker(&output_of(
        &requests[2],
        "late"
    )));
}

#[tokio::test]
async fn a_body_that_names_a_member_twice_reaches_the_upstream_unchanged() {
    // Readers disagree on which copy of a repeated member counts (serde_json and Python keep the last): an edit
    // could land in the copy the upstream ignores, e.g. the tool in the first `tools` and markers in the input.
    let (mock, proxy) = mock_and_proxy().await;
    let input = json!([
        {"role": "user", "content": "Run the tests."},
        {"type": "function_call", "call_id": "t1", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "t1", "output": failing_pytest_log()}
    ]);
    let once = format!(r#"{{"model":"mock-ok","tools":[],"input":{input}}}"#);
    let twice = format!(r#"{{"model":"mock-ok","tools":[],"input":{input},"tools":[]}}"#);
    for (body, rewritten) in [(once, true), (twice, false)] {
        assert_eq!(
            forwarded(&mock, &proxy, &body).await != body.as_bytes(),
            rewritten
        );
    }
}

#[tokio::test]
async fn install_chatter_reaches_the_upstream_thinned_with_its_outcome_and_errors() {
    // 36 lines, short enough for a log's head and tail to keep every one: the run of `Requirement already
    // satisfied` lines keeps its first three and last two.
    let (mock, proxy) = mock_and_proxy().await;
    let mut log = String::from("<returncode>0</returncode>\n<output>\nObtaining file:///testbed\n");
    for i in 0..30 {
        let note = if i == 17 {
            " (error reading RECORD)"
        } else {
            ""
        };
        log.push_str(&format!(
            "Requirement already satisfied: dependency-{i}>=2.0 in /opt/miniconda3/envs/testbed/lib/python3.9/site-packages (from Sphinx==4.1.0) (2.{i}.1){note}\n"
        ));
    }
    log.push_str("Installing collected packages: Sphinx\nSuccessfully installed Sphinx\n</output>");
    let turn = (
        "install-chatter",
        "Install the package.",
        "pip install -e .",
    );
    let received = output_received(&mock, &proxy, turn, &log).await;
    for kept in [
        "dependency-0>=",
        "dependency-2>=",
        "dependency-28>=",
        "dependency-29>=",
        "(2.17.1) (error reading RECORD)\n",
        "Successfully installed Sphinx",
    ] {
        assert!(received.contains(kept), "{kept}: {received}");
    }
    assert!(!received.contains("dependency-10>="), "{received}");
    assert_shrinks(&log, &received, (1, 2));
}

#[tokio::test]
async fn a_headed_table_reaches_the_upstream_with_the_rows_unlike_the_others() {
    // `kubectl get pods` over 150 pods: a listing keeps a sample of its head and tail, and none of the odd rows
    // holds an error word, so before, all three went behind the marker.
    let (mock, proxy) = mock_and_proxy().await;
    let mut table = String::from(
        "NAME                              READY   STATUS             RESTARTS   AGE\n",
    );
    let mut odd = Vec::new();
    for i in 0..150 {
        let (ready, status, restarts) = match i {
            41 => ("0/1", "CrashLoopBackOff", "14"),
            77 => ("0/1", "OOMKilled", "3"),
            103 => ("0/1", "Pending", "0"),
            _ => ("1/1", "Running", "0"),
        };
        let row = format!(
            "checkout-7d9f8c6b5-{i:05}         {ready:<7} {status:<18} {restarts:<10} 4d2h"
        );
        if status != "Running" {
            odd.push(row.clone());
        }
        table.push_str(&row);
        table.push('\n');
    }
    let turn = (
        "odd-rows",
        "Are the pods healthy?",
        "kubectl get pods -n shop",
    );
    let received = output_received(&mock, &proxy, turn, &table).await;
    for row in &odd {
        assert!(
            received.lines().any(|l| l == row),
            "{row} missing:\n{received}"
        );
    }
    assert!(
        !received.contains("checkout-7d9f8c6b5-00060 "),
        "{received}"
    );
    assert_shrinks(&table, &received, (1, 3));
}

#[tokio::test]
async fn a_uniform_log_reaches_the_upstream_with_the_lines_unlike_the_others() {
    // An access log of 400 health checks with a failed order and a probe of the admin path: no error word on
    // either line and no header to go by, so before, both went behind the marker with the health checks.
    let (mock, proxy) = mock_and_proxy().await;
    let mut log = String::new();
    let mut odd = Vec::new();
    for i in 0..400 {
        let request = match i {
            217 => "\"POST /api/orders HTTP/1.1\" 500 0",
            301 => "\"GET /health HTTP/1.1\" 503 19",
            _ => "\"GET /health HTTP/1.1\" 200 12",
        };
        let line = format!(
            "10.0.{}.{} - - [01/Dec/2026:10:{:02}:{:02} +0000] {request} \"-\" \"kube-probe/1.29\"",
            i / 200,
            i % 200,
            i / 60,
            i % 60
        );
        if i == 217 || i == 301 {
            odd.push(line.clone());
        }
        log.push_str(&line);
        log.push('\n');
    }
    let turn = (
        "odd-lines",
        "Why do orders fail?",
        "kubectl logs deploy/gateway --tail=400",
    );
    let received = output_received(&mock, &proxy, turn, &log).await;
    assert_visible(&received, &odd);
    assert!(!received.contains("10.0.0.150 "), "{received}");
    assert_shrinks(&log, &received, (1, 5));
}

#[tokio::test]
async fn a_notebook_reaches_the_upstream_with_every_cells_source_and_its_outputs_shrunk() {
    // `cat analysis.ipynb`: 24 cells, each with a training loop's stdout and a DataFrame's HTML; one cell failed.
    // Before, the cells array was sampled like rows, and 17 cells went behind a marker, code included.
    let (mock, proxy) = mock_and_proxy().await;
    let cells: Vec<Value> = (0..24)
        .map(|i| {
            let mut outputs = vec![
                json!({"output_type": "stream", "name": "stdout",
                       "text": (0..40).map(|e| format!("epoch {e}: loss 0.{:04}\n", 9000 - 7 * e - i)).collect::<Vec<_>>()}),
                json!({"output_type": "execute_result", "execution_count": i + 1, "metadata": {},
                       "data": {"text/html": (0..30).map(|r| format!("<tr><th>{r}</th><td>{}</td></tr>\n", r * i)).collect::<Vec<_>>(),
                                "text/plain": [format!("<DataFrame {i}: 30 rows x 1 columns>")]}}),
            ];
            if i == 15 {
                outputs.push(json!({"output_type": "error", "ename": "KeyError", "evalue": "'col_c'",
                                    "traceback": ["KeyError                     Traceback (most recent call last)", "KeyError: 'col_c'"]}));
            }
            json!({"cell_type": "code", "execution_count": i + 1, "id": format!("c{i:03}"), "metadata": {},
                   "outputs": outputs,
                   "source": [format!("df{i} = load_frame('part_{i}.parquet')\n"), format!("fit(df{i}, epochs=40)\n")]})
        })
        .collect();
    let nb = serde_json::to_string_pretty(&json!({
        "cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5
    }))
    .unwrap_or_default();
    let turn = (
        "notebook",
        "Why does the fit in cell 15 fail?",
        "cat analysis.ipynb",
    );
    let received = output_received(&mock, &proxy, turn, &nb).await;
    let kept: Value = serde_json::from_str(&received).unwrap_or_default();
    let original: Value = serde_json::from_str(&nb).unwrap_or_default();
    assert_eq!(
        kept["cells"].as_array().map(Vec::len),
        Some(24),
        "{received}"
    );
    for i in 0..24 {
        assert_eq!(
            kept["cells"][i]["source"], original["cells"][i]["source"],
            "cell {i}: {received}"
        );
    }
    assert!(received.contains("KeyError: 'col_c'"), "{received}");
    assert_shrinks(&nb, &received, (1, 2));
}

#[tokio::test]
async fn the_turn_that_catches_up_counts_its_skipped_outputs_once() {
    // The second turn's first pass finds the first marker needs the waiting output of its settled head and is
    // taken again whole: what it skipped is counted by the pass that goes through, not by both.
    let mock = start_mock().await;
    let mut opts = ProxyOptions::new(&mock_url(&mock));
    opts.raw.compress.exclude_tools = Some(vec!["secrets".into()]);
    let proxy = start_proxy_with(opts).await;
    let mut input = vec![
        json!({"role": "user", "content": "Build it."}),
        json!({"type": "function_call", "call_id": "s", "name": "secrets", "arguments": "{}"}),
        shell_output("s", &passing_log("vault", 60)),
        shell_call("a"),
        shell_output("a", &passing_log("first", SMALL_LOG)),
    ];
    let resp = post(&proxy, &threshold_turn(&input)).await;
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "0");
    input.extend([
        shell_call("b"),
        shell_output("b", &passing_log("second", SMALL_LOG)),
    ]);
    let resp = post(&proxy, &threshold_turn(&input)).await;
    assert_eq!(resp.headers()["x-ctxgate-compressed"], "2");
    assert_eq!(output_of(&sent(&mock)[1], "s"), passing_log("vault", 60));
    // Once per turn that carries it: two turns, two.
    let metrics = proxy.metrics().await;
    assert!(
        metrics.contains("ctxgate_compress_skipped_total{reason=\"excluded_tool\"} 2\n"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_report_reaches_the_upstream_with_its_findings_and_its_deep_bulk_behind_a_marker() {
    // A scanner's JSON report: the finding at the top, its rule's metadata (14 notes) four levels down. The
    // finding stays as it was; the bulk, which holds no error word, goes behind one marker. (A finding whose row
    // holds a warning or error word stays whole while under 4 KB: the JSON floor.)
    let (mock, proxy) = mock_and_proxy().await;
    // Fourteen members of a sentence each: no member large enough for a compressor of its own.
    let metadata: serde_json::Map<String, Value> = (0..14)
        .map(|i| {
            (
                format!("note_{i}"),
                json!(format!(
                    "Reference {i}: https://owasp.org/Top10/A0{}_2021/ describes how string-built queries let input \
                     change the statement.",
                    i % 9
                )),
            )
        })
        .collect();
    let report = serde_json::to_string_pretty(&json!({
        "results": [{
            "check_id": "java.lang.security.audit.formatted-sql-string",
            "path": "src/main/java/Db.java",
            "start": {"line": 33, "col": 24},
            "extra": {
                "message": "Detected a formatted string in a SQL statement.",
                "severity": "INFO",
                "metadata": metadata,
            },
        }],
        "version": "1.4.0",
    }))
    .unwrap();
    let turn = ("deep-bulk", "Review the scan.", "semgrep --json .");
    let received = output_received(&mock, &proxy, turn, &report).await;
    let v: Value = serde_json::from_str(&received).unwrap();
    let finding = &v["results"][0];
    assert_eq!(finding["path"], "src/main/java/Db.java");
    assert_eq!(finding["extra"]["severity"], "INFO");
    assert_eq!(
        finding["extra"]["message"],
        "Detected a formatted string in a SQL statement."
    );
    let metadata = finding["extra"]["metadata"].as_str().unwrap_or_default();
    assert_eq!(
        ctxgate::ctxzip::find_markers(metadata)
            .iter()
            .map(|(_, note)| note.as_str())
            .collect::<Vec<_>>(),
        vec!["14_keys_offloaded"],
        "{received}"
    );
}

#[tokio::test]
async fn a_json_report_whose_rows_are_all_errors_reaches_the_upstream_folded_with_every_row() {
    // pyright's `--outputjson`: every diagnostic is an error row the floor keeps whole; only its layout is folded.
    let (mock, proxy) = mock_and_proxy().await;
    let rows: Vec<Value> = (0..80)
        .map(|i| {
            json!({"file": format!("/src/pkg/flow{}.py", i % 9), "severity": "error",
                "message": format!("\"edge_{i}\" is possibly unbound"),
                "range": {"start": {"line": 10 + i, "character": 4}, "end": {"line": 10 + i, "character": 12}},
                "rule": "reportPossiblyUnbound"})
        })
        .collect();
    let doc = json!({"version": "1.1.414", "generalDiagnostics": rows,
        "summary": {"filesAnalyzed": 9, "errorCount": 80}});
    let report = serde_json::to_string_pretty(&doc).unwrap();
    let call = (
        "pyright",
        "Fix the type errors.",
        "pyright --outputjson src/pkg",
    );
    let received = output_received(&mock, &proxy, call, &report).await;
    assert!(received.contains("<<ctxzip:"), "{received}");
    assert_shrinks(&report, &received, (9, 10));
    // The same value but the marker member: every row and key is there.
    let mut value: Value = serde_json::from_str(&received).unwrap();
    value.as_object_mut().unwrap().remove("_ctxzip");
    assert_eq!(value, doc);
    assert_visible(
        &received,
        report.lines().filter(|l| ctxgate::ctxzip::is_floor_line(l)),
    );
}
