//! Views: whether a tool call showed the agent a source file.
//!
//! Source stays verbatim (an agent edits against what it sees), and the text alone does not always tell source
//! from prose: a range cut out of a long docstring (`sed -n '501,600p' model.py`) reads like documentation. The
//! call that produced the output does tell. In the request path the compress stage asks [`views_source_file`]
//! about each output's call (the tool's name and arguments); when it says yes, the output is source unless its
//! command failed or its text reads as generated ([`looks_generated`]: a minified bundle, a dump).

use serde_json::Value;

/// Programs that only print a file, or part of it, when they are every stage of a shell command (`open` is
/// SWE-agent's file viewer).
const VIEWERS: [&str; 10] = [
    "cat", "nl", "head", "tail", "sed", "less", "more", "bat", "batcat", "open",
];

/// Words of a tool's name that say it reads a file (`read_file`, `ReadFile`, `view_file`, an MCP server's
/// `read_text_file`), and words that say it does something else with files too (`read_dir`, `edit_file`).
const READ_WORDS: [&str; 5] = ["read", "view", "open", "cat", "show"];
const OTHER_WORDS: [&str; 14] = [
    "write",
    "edit",
    "create",
    "replace",
    "delete",
    "dir",
    "directory",
    "list",
    "ls",
    "search",
    "grep",
    "find",
    "image",
    "url",
];

/// Arguments a reading tool names its file with.
const PATH_KEYS: [&str; 8] = [
    "path",
    "file_path",
    "filePath",
    "absolute_path",
    "file",
    "filename",
    "target_file",
    "uri",
];

/// Extensions of source and build files an agent edits.
const SOURCE_EXTENSIONS: [&str; 45] = [
    "py", "pyi", "pyx", "rs", "go", "js", "mjs", "cjs", "ts", "tsx", "jsx", "java", "kt", "kts",
    "scala", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "cs", "rb", "php", "swift", "m", "mm",
    "sh", "bash", "zsh", "pl", "pm", "lua", "r", "sql", "vue", "svelte", "css", "scss", "toml",
    "yaml", "yml", "ini", "cfg",
];

/// Source files known by name alone.
const SOURCE_NAMES: [&str; 4] = ["Makefile", "Dockerfile", "CMakeLists.txt", "Jenkinsfile"];

/// Whether `arguments` (a tool call's JSON arguments) view a source file: an editor's `view` of one
/// (`{"command": "view", "path": "src/app.py"}`), or a shell command — a string, or Codex's `["bash", "-lc", …]` —
/// whose every stage is a viewer (`cat`, `nl -ba`, `sed -n '1,80p'`, `head`, `tail`; `cd` allowed) and that names
/// one. `grep` is a search, not a view; `sed` without `-n` edits.
///
/// A tool whose name says it reads a file (`read_file`, Codex's and the MCP filesystem server's readers) views
/// source when the file it names (`PATH_KEYS`) is one.
pub fn views_source_file(tool: &str, arguments: &str) -> bool {
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
        return false;
    };
    let command = match args.get("command").or_else(|| args.get("cmd")) {
        Some(value) => match command_text(value) {
            Some(c) => c,
            None => return false,
        },
        None => {
            return is_reader(tool)
                && PATH_KEYS
                    .iter()
                    .filter_map(|k| args.get(*k).and_then(Value::as_str))
                    .any(is_source_path);
        }
    };
    if command == "view" {
        return args
            .get("path")
            .and_then(Value::as_str)
            .is_some_and(is_source_path);
    }
    shell_views_source(command)
}

/// Programs that fetch from the network and print what they got.
const FETCHERS: [&str; 7] = ["curl", "wget", "http", "https", "xh", "lynx", "w3m"];
/// Words of a tool's name that say it fetches from the web (`web_fetch`, `fetch_url`, `WebFetch`, `browser_get`).
const FETCH_WORDS: [&str; 6] = ["fetch", "url", "web", "http", "browse", "browser"];

/// Whether a tool call fetched something from the network: a shell command with a stage that runs a fetcher
/// (`curl`, `wget`, HTTPie, `xh`, `lynx`, `w3m`; `cd` and pipes allowed), or a tool whose name says it fetches
/// (`fetch`, `url`, `web`, `http`, `browse`).
pub fn fetches_page(tool: &str, arguments: &str) -> bool {
    if name_words(tool)
        .iter()
        .any(|w| FETCH_WORDS.contains(&w.as_str()))
    {
        return true;
    }
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
        return false;
    };
    let Some(command) = args
        .get("command")
        .or_else(|| args.get("cmd"))
        .and_then(command_text)
    else {
        return false;
    };
    command
        .split(['|', ';', '&', '\n'])
        .filter_map(|stage| stage.split_whitespace().next())
        .any(|program| FETCHERS.contains(&program.rsplit('/').next().unwrap_or(program)))
}

/// The command line a tool call's `command`/`cmd` argument holds: the string itself, or the last element of an
/// argv array (Codex's `["bash", "-lc", "…"]`).
pub(crate) fn command_text(value: &Value) -> Option<&str> {
    match value {
        Value::String(c) => Some(c),
        Value::Array(parts) => parts.last().and_then(Value::as_str),
        _ => None,
    }
}

/// [`views_source_file`] for a shell command line.
fn shell_views_source(command: &str) -> bool {
    if command.contains(['>', '<', '`', '$', '\n']) {
        // A redirect writes, a substitution runs something else: not a plain view.
        return false;
    }
    let mut names_source = false;
    for stage in command.split(['|', ';', '&']) {
        let mut words = stage.split_whitespace();
        let Some(program) = words.next() else {
            continue;
        };
        let args: Vec<&str> = words.collect();
        match program {
            "cd" => continue,
            "sed" if !args.iter().any(|a| a.starts_with("-n")) => return false,
            p if VIEWERS.contains(&p) => {}
            _ => return false,
        }
        names_source |= args
            .iter()
            .map(|a| a.trim_matches(['\'', '"']))
            .any(is_source_path);
    }
    names_source
}

/// Whether a tool's name says it reads files and nothing else: one of its words (split at `_`, `-`, `.`, and
/// lower-to-upper case changes) is in [`READ_WORDS`] and none is in [`OTHER_WORDS`].
fn is_reader(tool: &str) -> bool {
    let words = name_words(tool);
    words.iter().any(|w| READ_WORDS.contains(&w.as_str()))
        && !words.iter().any(|w| OTHER_WORDS.contains(&w.as_str()))
}

/// A tool's name as lowercase words, split at `_`, `-`, `.` and lower-to-upper case changes.
fn name_words(tool: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in tool.chars() {
        if !c.is_ascii_alphanumeric() || (c.is_ascii_uppercase() && previous_lower) {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_lowercase());
        }
    }
    words.push(word);
    words
}

/// A line this long is no hand-written source: a minified bundle, a generated table, a dump's `INSERT`.
const GENERATED_LINE: usize = 10_000;
/// Lines longer than this, when more than a tenth of a text's, say the same.
const LONG_LINE: usize = 400;

/// Whether `text`, though a viewed file's, reads as generated rather than written: a line of
/// `GENERATED_LINE` bytes or more, or more than a tenth of its lines over `LONG_LINE`. `cat dist/app.min.js`
/// is a view of a `.js` file, but no one edits it against what they see; its text decides how it is compressed.
pub fn looks_generated(text: &str) -> bool {
    let (mut lines, mut long) = (0usize, 0usize);
    for line in text.split('\n') {
        if line.len() >= GENERATED_LINE {
            return true;
        }
        lines += 1;
        long += usize::from(line.len() > LONG_LINE);
    }
    long * 10 > lines
}

/// Whether `path` names a source file by its extension or name.
fn is_source_path(path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    SOURCE_NAMES.contains(&name)
        || name
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && SOURCE_EXTENSIONS.contains(&ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetches_are_told_from_other_calls() {
        for yes in [
            r#"{"command": "curl -s https://example.org/docs/"}"#,
            r#"{"command": "cd site && curl -sL localhost:3000 | head -200"}"#,
            r#"{"cmd": ["bash", "-lc", "wget -qO- https://example.org"]}"#,
            r#"{"command": "/usr/bin/curl -i http://localhost:8000/"}"#,
        ] {
            assert!(fetches_page("shell", yes), "{yes}");
        }
        assert!(fetches_page(
            "web_fetch",
            r#"{"url": "https://example.org"}"#
        ));
        assert!(fetches_page(
            "WebFetch",
            r#"{"url": "https://example.org"}"#
        ));
        for no in [
            r#"{"command": "cat templates/index.html"}"#,
            r#"{"command": "grep -rn curl scripts/"}"#,
            r#"{"command": "python -m http.server"}"#,
            "not json",
        ] {
            assert!(!fetches_page("shell", no), "{no}");
        }
        assert!(!fetches_page("read_file", r#"{"path": "index.html"}"#));
    }

    #[test]
    fn views_of_source_files_are_told_from_other_calls() {
        for yes in [
            r#"{"command": "cat django/utils/html.py"}"#,
            r#"{"command": "sed -n '501,600p' sklearn/linear_model/coordinate_descent.py"}"#,
            r#"{"command": "nl -ba lib/matplotlib/text.py | sed -n '1641,1750p'"}"#,
            r#"{"command": "cd /testbed && head -80 src/main.rs"}"#,
            r#"{"command": ["bash", "-lc", "sed -n '1,200p' src/turn/mod.rs"]}"#,
            r#"{"command": "view", "path": "/repo/app/models.py"}"#,
            r#"{"cmd": "cat Makefile"}"#,
            r#"{"command": "open src/astropy/io/fits/card.py 1200"}"#,
        ] {
            assert!(views_source_file("shell", yes), "{yes}");
        }
        // A reading tool names its file in its own arguments.
        for (tool, yes) in [
            (
                "read_file",
                r#"{"file_path": "/repo/src/lib.rs", "offset": 40, "limit": 120}"#,
            ),
            ("ReadFile", r#"{"absolute_path": "/repo/app/models.py"}"#),
            (
                "mcp__filesystem__read_text_file",
                r#"{"path": "src/index.ts"}"#,
            ),
            ("view_file", r#"{"target_file": "pkg/server.go"}"#),
        ] {
            assert!(views_source_file(tool, yes), "{tool} {yes}");
        }
        for (tool, no) in [
            ("read_file", r#"{"file_path": "/var/log/app.log"}"#),
            ("read_dir", r#"{"path": "src/lib.rs"}"#),
            (
                "edit_file",
                r#"{"path": "src/lib.rs", "old": "a", "new": "b"}"#,
            ),
            ("fetch", r#"{"url": "https://example.com/app.py"}"#),
            ("run_tests", r#"{"path": "tests/test_app.py"}"#),
            ("readUrl", r#"{"uri": "https://example.com/app.py"}"#),
        ] {
            assert!(!views_source_file(tool, no), "{tool} {no}");
        }
        for no in [
            r#"{"command": "cat AUTHORS"}"#,
            r#"{"command": "cat app.log"}"#,
            r#"{"command": "grep -rn Retry src/sync.py"}"#,
            r#"{"command": "python -m pytest tests/test_sync.py"}"#,
            r#"{"command": "sed -i 's/a/b/' src/sync.py"}"#,
            r#"{"command": "cat src/a.py > /tmp/b.py"}"#,
            r#"{"command": "cat $(find . -name '*.py')"}"#,
            r#"{"command": "create", "path": "src/new.py", "file_text": "x = 1"}"#,
            r#"{"command": "view", "path": "docs/index.md"}"#,
            "not json",
            r#"["cat", "a.py"]"#,
        ] {
            assert!(!views_source_file("shell", no), "{no}");
        }
    }

    #[test]
    fn a_minified_bundle_or_a_dump_reads_as_generated() {
        let source = "def f(x):\n    return x + 1\n".repeat(200);
        assert!(!looks_generated(&source));
        let with_a_long_string = format!("{source}URL = \"{}\"\n", "a".repeat(600));
        assert!(!looks_generated(&with_a_long_string));
        let bundle = format!("!function(e){{{}}}();\n", "var a=1;".repeat(2000));
        assert!(looks_generated(&bundle));
        let dump = format!("INSERT INTO t VALUES {};\n", "(1,'x'),".repeat(60)).repeat(50);
        assert!(looks_generated(&dump));
    }
}
