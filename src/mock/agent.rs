//! Scenarios that drive a real agent loop (the Codex CLI, the `openai-agents` SDK) through ctxgate.
//!
//! Both are stateless functions of the request, so they stay deterministic across retries and restarts, and both
//! keep working when ctxgate compressed or folded the transcript: they only read the last items of the input, which
//! a fold always keeps verbatim.
//!
//! - `mock-agent-shell`: until a tool output follows the last user message, calls the client's shell tool with
//!   [`SHELL_COMMAND`] (a command that prints about 75 KB of varied log lines); then answers [`SHELL_DONE_TEXT`].
//!   The shell tool is the first of `exec_command` (Codex CLI), `shell`, `local_shell`-style function tools named
//!   like a shell, else the first function tool.
//! - `mock-agent-loop`: calls the first function tool with `{"page": N}`, N one more than the `page` of the last
//!   function call in the input (1 when there is none), until N would pass [`LOOP_PAGES`]; then answers
//!   `ctxgate-mock: agent loop done after N tool calls`.

use serde_json::{Value, json};

use super::input;
use super::scenario::Item;

/// Prints 1000 log lines (about 75 KB), each different, with a warning every 97th and no error: the output is
/// compressible and the command exits 0. Needs only `awk`.
pub const SHELL_COMMAND: &str = "awk 'BEGIN { for (i = 1; i <= 1000; i++) { lvl = (i % 97 == 0) ? \"WARN\" : \"INFO\"; printf \"2026-01-01T00:%02d:%02d %s worker-%d request %06d served in %d ms bytes=%d\\n\", (i / 60) % 60, i % 60, lvl, i % 7, i * 7919 % 1000000, (i * 37) % 1000, (i * 7919) % 65536 } }'";
/// The final answer of `mock-agent-shell`.
pub const SHELL_DONE_TEXT: &str = "ctxgate-mock: the command ran and its output came back.";
/// Tool calls `mock-agent-loop` makes before it answers.
pub const LOOP_PAGES: u64 = 8;
/// Names tried, in order, for the shell tool.
const SHELL_TOOLS: &[&str] = &[
    "exec_command",
    "shell",
    "shell_command",
    "local_shell",
    "bash",
];

/// `mock-agent-shell`: the shell call, or the final answer once its output is in.
pub(crate) fn shell(req: &Value) -> Item {
    if input::output_after_last_user(req) {
        return Item::Message {
            text: SHELL_DONE_TEXT.to_owned(),
        };
    }
    let tools = input::function_tools(req);
    let name = |t: &&Value| t.get("name").and_then(Value::as_str).map(str::to_owned);
    let tool = SHELL_TOOLS
        .iter()
        .find_map(|wanted| tools.iter().find(|t| name(t).as_deref() == Some(wanted)))
        .or_else(|| tools.first());
    let tool_name = tool.and_then(name).unwrap_or_else(|| "shell".to_owned());
    let properties = tool.and_then(|t| t.pointer("/parameters/properties"));
    let has = |p: &str| properties.is_some_and(|props| props.get(p).is_some());
    let arguments = if has("command") && !has("cmd") {
        json!({"command": ["bash", "-lc", SHELL_COMMAND]})
    } else if has("max_output_tokens") {
        // Codex CLI's exec_command truncates to 10,000 tokens unless asked for more.
        json!({"cmd": SHELL_COMMAND, "max_output_tokens": 30000})
    } else {
        json!({"cmd": SHELL_COMMAND})
    };
    Item::Call {
        name: tool_name,
        arguments: arguments.to_string(),
    }
}

/// `mock-agent-loop`: the next page's call, or the final answer.
pub(crate) fn agent_loop(req: &Value) -> Item {
    let next = input::last_call_arguments(req)
        .and_then(|args| serde_json::from_str::<Value>(&args).ok())
        .and_then(|args| args.get("page").and_then(Value::as_u64))
        .unwrap_or(0)
        + 1;
    let tool = input::function_tools(req)
        .first()
        .and_then(|t| t.get("name").and_then(Value::as_str))
        .map(str::to_owned);
    match tool {
        Some(name) if next <= LOOP_PAGES => Item::Call {
            name,
            arguments: json!({"page": next}).to_string(),
        },
        _ => Item::Message {
            text: format!(
                "ctxgate-mock: agent loop done after {} tool calls",
                next - 1
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(item: Item) -> (String, Value) {
        match item {
            Item::Call { name, arguments } => {
                (name, serde_json::from_str(&arguments).unwrap_or_default())
            }
            Item::Message { text } => (format!("message: {text}"), Value::Null),
        }
    }

    #[test]
    fn shell_prefers_exec_command_then_answers_after_the_output() {
        let tools = json!([
            {"type": "function", "name": "view_image", "parameters": {}},
            {"type": "function", "name": "exec_command", "parameters": {"properties": {"cmd": {}, "max_output_tokens": {}}}}
        ]);
        let user = json!({"role": "user", "content": "go"});
        let req = json!({"tools": tools, "input": [user]});
        let (name, args) = call(shell(&req));
        assert_eq!(name, "exec_command");
        assert_eq!(args["cmd"], SHELL_COMMAND);
        let done = json!({"tools": tools, "input": [
            user,
            {"type": "function_call", "name": "exec_command", "call_id": "c1", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "lots"}
        ]});
        assert_eq!(
            shell(&done),
            Item::Message {
                text: SHELL_DONE_TEXT.to_owned()
            }
        );
        // A new user turn after an old output asks again.
        let again = json!({"tools": tools, "input": [done["input"][1], done["input"][2], user]});
        assert_eq!(call(shell(&again)).0, "exec_command");
    }

    #[test]
    fn shell_fills_a_command_array_tool() {
        let req = json!({"tools": [{"type": "function", "name": "shell", "parameters": {"properties": {"command": {}}}}]});
        let (name, args) = call(shell(&req));
        assert_eq!(name, "shell");
        assert_eq!(args["command"][2], SHELL_COMMAND);
    }

    #[test]
    fn agent_loop_counts_pages_from_the_last_call() {
        let tools = json!([{"type": "function", "name": "fetch_logs", "parameters": {}}]);
        let req = json!({"tools": tools, "input": [{"role": "user", "content": "go"}]});
        assert_eq!(call(agent_loop(&req)).1, json!({"page": 1}));
        let at = |page: u64| {
            json!({"tools": tools, "input": [
                {"role": "user", "content": "go"},
                {"type": "compaction", "encrypted_content": "x"},
                {"type": "function_call", "name": "fetch_logs", "call_id": "c", "arguments": json!({"page": page}).to_string()},
                {"type": "function_call_output", "call_id": "c", "output": "..."}
            ]})
        };
        assert_eq!(call(agent_loop(&at(3))).1, json!({"page": 4}));
        assert_eq!(
            agent_loop(&at(LOOP_PAGES)),
            Item::Message {
                text: format!("ctxgate-mock: agent loop done after {LOOP_PAGES} tool calls")
            }
        );
    }
}
