//! The corpus the report reads: a folder of tool outputs and a folder of transcripts.
//!
//! Tool outputs are plain files, one output each; a `manifest.tsv` beside them (columns `filename`, `kind`, and
//! optionally `note` starting with `command: …`) names each output's kind and the command that produced it, which
//! the report sends as the tool call's arguments (the proxy reads them for relevance, as it would from a real
//! agent). Without a manifest every file counts as kind `unlabelled`. Transcripts are JSON files holding one
//! Responses API `input` array each.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ReportError;

/// One tool output of the corpus.
pub struct Output {
    pub name: String,
    pub kind: String,
    /// The command that produced it, when the manifest says.
    pub command: String,
    pub text: String,
}

/// One transcript: a Responses `input` array.
pub struct Transcript {
    pub name: String,
    pub items: Vec<Value>,
}

fn io_error(path: &Path, e: std::io::Error) -> ReportError {
    ReportError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

fn files(dir: &Path, ext: Option<&str>) -> Result<Vec<PathBuf>, ReportError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io_error(dir, e))? {
        let path = entry.map_err(|e| io_error(dir, e))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !path.is_file() || name.starts_with('.') || name == "manifest.tsv" || name == "README.md"
        {
            continue;
        }
        if ext.is_some_and(|e| path.extension().and_then(|x| x.to_str()) != Some(e)) {
            continue;
        }
        out.push(path);
    }
    out.sort();
    Ok(out)
}

/// `filename → (kind, command)` from a manifest's header-named columns.
fn manifest(dir: &Path) -> Result<HashMap<String, (String, String)>, ReportError> {
    let path = dir.join("manifest.tsv");
    if !path.exists() {
        return Ok(HashMap::new());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| io_error(&path, e))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let (Some(file), Some(kind)) = (col("filename").or(col("file")), col("kind")) else {
        return Ok(HashMap::new());
    };
    let note = col("note");
    let mut out = HashMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split('\t').collect();
        let (Some(f), Some(k)) = (cells.get(file), cells.get(kind)) else {
            continue;
        };
        let command = note
            .and_then(|n| cells.get(n))
            .and_then(|n| n.strip_prefix("command: "))
            .unwrap_or("")
            .to_string();
        out.insert(f.to_string(), (k.to_string(), command));
    }
    Ok(out)
}

/// Every output file of `dir` (text files only; others are reported and skipped).
pub fn outputs(dir: &Path) -> Result<Vec<Output>, ReportError> {
    let labels = manifest(dir)?;
    let mut out = Vec::new();
    for path in files(dir, None)? {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        let Ok(text) = std::fs::read_to_string(&path) else {
            tracing::warn!(path = %path.display(), "not UTF-8 text; skipped");
            continue;
        };
        let (kind, command) = labels
            .get(&name)
            .cloned()
            .unwrap_or_else(|| ("unlabelled".to_string(), String::new()));
        out.push(Output {
            name,
            kind,
            command,
            text,
        });
    }
    Ok(out)
}

/// Every `*.json` transcript of `dir`; a file that is not a JSON array is an error naming it.
pub fn transcripts(dir: &Path) -> Result<Vec<Transcript>, ReportError> {
    let mut out = Vec::new();
    for path in files(dir, Some("json"))? {
        let text = std::fs::read_to_string(&path).map_err(|e| io_error(&path, e))?;
        let items = match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(items)) => items,
            Ok(_) => {
                return Err(ReportError::Read {
                    path: path.display().to_string(),
                    message: "not a JSON array of input items".into(),
                });
            }
            Err(e) => {
                return Err(ReportError::Read {
                    path: path.display().to_string(),
                    message: e.to_string(),
                });
            }
        };
        out.push(Transcript {
            name: path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_string(),
            items,
        });
    }
    Ok(out)
}
