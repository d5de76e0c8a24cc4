//! Jupyter notebooks (`.ipynb`): every cell's source stays verbatim, the cells' outputs are compressed.
//!
//! An agent that reads a notebook (`cat analysis.ipynb`, a notebook tool's raw view) edits its cells against what
//! it saw, so a cell's `source` is source code and stays whole, as a viewed source file does. The bulk of a
//! notebook is elsewhere: its cells' `outputs` (a DataFrame's HTML next to its text, a figure's base64 PNG, a
//! training loop's stdout) and widget state under `metadata`. Those go through the JSON document compressor as
//! any nested value does (error lines, a traceback output's frames, stay); the cells array itself is never
//! treated as rows, which would put whole cells, code included, behind a marker.

use super::jscan::{Member, Span, array_items, object_members, plain_str};
use super::json_object::compress_value;
use super::json_seen::Step;
use super::{Ctx, Tally};

/// Whether an object's members are a notebook's: an `nbformat` number and a `cells` array.
pub(crate) fn is_notebook(text: &str, members: &[Member]) -> bool {
    let has = |name: &str, starts: fn(&u8) -> bool| {
        members.iter().any(|m| {
            plain_str(text, m.key) == Some(name)
                && text.as_bytes().get(m.value.start).is_some_and(starts)
        })
    };
    has("nbformat", u8::is_ascii_digit) && has("cells", |b| *b == b'[')
}

/// The notebook at `span` (whose members are `members`) with its outputs and other bulk compressed and every
/// cell's source as it was; `None` when nothing got shorter.
pub(crate) fn compress(
    text: &str,
    span: Span,
    members: &[Member],
    ctx: &Ctx,
    depth: usize,
    tally: &mut Tally,
) -> Option<String> {
    let bytes = text.as_bytes();
    let mut replaced: Vec<(Span, String)> = Vec::new();
    for m in members {
        // Every cell stays, so paths through them are ones the model can follow (a repeated output object may
        // point back to `.cells[2].outputs[0]`).
        let _member = ctx.seen.enter(Step::key(text, m.key));
        if plain_str(text, m.key) != Some("cells") {
            if let Some(v) = compress_value(text, m.value, ctx, depth + 1, tally) {
                replaced.push((m.value, v));
            }
            continue;
        }
        for (i, cell) in array_items(bytes, m.value)?.into_iter().enumerate() {
            if bytes.get(cell.start) != Some(&b'{') {
                continue;
            }
            let _cell = ctx.seen.enter(Step::Index(i));
            for field in object_members(bytes, cell)? {
                // The cell's code or text, its type, id and execution count stay as they are.
                if !matches!(
                    plain_str(text, field.key),
                    Some("outputs" | "attachments" | "metadata")
                ) {
                    continue;
                }
                let _field = ctx.seen.enter(Step::key(text, field.key));
                // Three levels down: the cells array, the cell, its member.
                if let Some(v) = compress_value(text, field.value, ctx, depth + 3, tally) {
                    replaced.push((field.value, v));
                }
            }
        }
    }
    if replaced.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(span.len());
    let mut copied_to = span.start;
    for (at, value) in replaced {
        out.push_str(text.get(copied_to..at.start)?);
        out.push_str(&value);
        copied_to = at.end;
    }
    out.push_str(text.get(copied_to..span.end)?);
    Some(out)
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;
    use crate::ctxzip::jscan::top_value;
    use serde_json::json;

    fn notebook(cells: usize) -> String {
        let cells: Vec<_> = (0..cells)
            .map(|i| {
                let mut outputs = vec![json!({
                    "output_type": "stream",
                    "name": "stdout",
                    "text": (0..60).map(|e| format!("epoch {e}: loss 0.{:04}\n", 9000 - e * 7 - i)).collect::<Vec<_>>(),
                })];
                if i == 7 {
                    outputs.push(json!({
                        "output_type": "error",
                        "ename": "KeyError",
                        "evalue": "'col_c'",
                        "traceback": ["KeyError                                  Traceback (most recent call last)", "KeyError: 'col_c'"],
                    }));
                }
                json!({
                    "cell_type": "code",
                    "execution_count": i + 1,
                    "id": format!("cell-{i:04x}"),
                    "metadata": {},
                    "outputs": outputs,
                    "source": [format!("df{i} = load('data_{i}.csv')\n"), format!("train(df{i}, epochs=60)\n")],
                })
            })
            .collect();
        serde_json::to_string_pretty(&json!({
            "cells": cells,
            "metadata": {"kernelspec": {"name": "python3"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }))
        .unwrap()
    }

    #[test]
    fn every_cells_source_stays_and_its_outputs_shrink() {
        let text = notebook(30);
        let span = top_value(&text).unwrap();
        let members = object_members(text.as_bytes(), span).unwrap();
        assert!(is_notebook(&text, &members));
        let ctx = Ctx::new("0123456789ab".into(), &crate::ctxzip::Options::default());
        let mut tally = Tally::default();
        let out = compress(&text, span, &members, &ctx, 0, &mut tally).unwrap();
        assert!(
            out.len() * 3 < text.len(),
            "{} -> {}",
            text.len(),
            out.len()
        );
        let kept: serde_json::Value = serde_json::from_str(&out).unwrap();
        let original: serde_json::Value = serde_json::from_str(&text).unwrap();
        for (cell, was) in kept["cells"]
            .as_array()
            .unwrap()
            .iter()
            .zip(original["cells"].as_array().unwrap())
        {
            assert_eq!(cell["source"], was["source"]);
            assert_eq!(cell["id"], was["id"]);
        }
        assert_eq!(kept["cells"].as_array().unwrap().len(), 30);
        assert!(out.contains("KeyError: 'col_c'"), "{out}");
    }

    #[test]
    fn an_output_a_later_cell_repeats_points_to_its_cell() {
        let table = json!({
            "output_type": "execute_result",
            "execution_count": 1,
            "metadata": {},
            "data": {"text/plain": (0..20).map(|r| format!("{r:>3}  alpha  {:.3}  beta\n", r as f64 / 7.0)).collect::<Vec<_>>()},
        });
        let cell = |i: usize| {
            json!({"cell_type": "code", "execution_count": i + 1, "id": format!("c{i}"), "metadata": {},
                   "outputs": [table.clone()], "source": ["df.head(20)\n"]})
        };
        let text = serde_json::to_string_pretty(&json!({
            "cells": [cell(0), cell(1)], "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
        }))
        .unwrap();
        let span = top_value(&text).unwrap();
        let members = object_members(text.as_bytes(), span).unwrap();
        let ctx = Ctx::new("0123456789ab".into(), &crate::ctxzip::Options::default());
        let out = compress(&text, span, &members, &ctx, 0, &mut Tally::default()).unwrap();
        let kept: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            kept["cells"][1]["outputs"][0]["_same_as"], ".cells[0].outputs[0]",
            "{out}"
        );
    }

    #[test]
    fn an_object_without_nbformat_or_cells_is_no_notebook() {
        for text in [
            r#"{"cells": [], "version": 4}"#,
            r#"{"nbformat": 4, "cells": {}}"#,
            r#"{"nbformat": "4", "cells": []}"#,
        ] {
            let span = top_value(text).unwrap();
            let members = object_members(text.as_bytes(), span).unwrap();
            assert!(!is_notebook(text, &members), "{text}");
        }
    }
}
