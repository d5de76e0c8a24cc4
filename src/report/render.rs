//! The report as a person reads it: one table per section.

use super::{Report, percent_less};

fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

fn percent(kept: usize, total: usize) -> String {
    if total == 0 {
        "—".into()
    } else {
        format!("{:.1} %", 100.0 * kept as f64 / total as f64)
    }
}

pub fn to_text(r: &Report) -> String {
    let mut out = String::new();
    if !r.outputs.is_empty() {
        out.push_str(&format!(
            "## Tool outputs, each its own conversation (tokens: {})\n\n",
            r.tokenizer
        ));
        out.push_str("| kind | files | tokens before | tokens after | fewer tokens | naive rule: fewer tokens | error lines kept | changed | stage ms |\n|---|---|---|---|---|---|---|---|---|\n");
        let mut rows: Vec<(&str, &super::OutputTotals)> =
            r.by_kind.iter().map(|(k, t)| (k.as_str(), t)).collect();
        rows.push(("**all**", &r.outputs_total));
        for (kind, t) in rows {
            out.push_str(&format!(
                "| {kind} | {} | {} | {} | {:.1} % | {:.1} % | {}/{} ({}) | {} | {:.1} |\n",
                t.files,
                t.tokens_before,
                t.tokens_after,
                t.saved_percent(),
                percent_less(t.tokens_before, t.tokens_naive),
                t.error_lines_kept,
                t.error_lines,
                percent(t.error_lines_kept, t.error_lines),
                t.changed,
                ms(t.micros),
            ));
        }
        let lost: Vec<_> = r.outputs.iter().filter(|o| !o.lost.is_empty()).collect();
        if !lost.is_empty() {
            out.push_str("\nError lines not visible verbatim:\n");
            for o in lost {
                for l in o.lost.iter().take(3) {
                    out.push_str(&format!("- {}: {}\n", o.name, l));
                }
            }
        }
        out.push('\n');
    }
    if !r.transcripts.is_empty() {
        out.push_str("## Transcripts, each sent whole with a final \"continue\" (first seen)\n\n");
        out.push_str("| transcript | tokens before | tokens after | fewer tokens | tool outputs: before → after | error lines kept | fold | stage ms |\n|---|---|---|---|---|---|---|---|\n");
        let mut total = super::TranscriptRow {
            name: "**all**".into(),
            ..Default::default()
        };
        for t in &r.transcripts {
            total.add(t);
        }
        for t in r.transcripts.iter().chain(std::iter::once(&total)) {
            out.push_str(&format!(
                "| {} | {} | {} | {:.1} % | {} → {} ({:.1} %) | {} | {} | {:.1} |\n",
                t.name,
                t.tokens_before,
                t.tokens_after,
                percent_less(t.tokens_before, t.tokens_after),
                t.output_tokens_before,
                t.output_tokens_after,
                percent_less(t.output_tokens_before, t.output_tokens_after),
                percent(t.error_lines_kept, t.error_lines),
                t.fold,
                ms(t.micros),
            ));
        }
        out.push('\n');
    }
    if !r.transcripts.is_empty() {
        out.push_str(&breakdown(&r.breakdown));
    }
    if !r.replays.is_empty() {
        out.push_str(
            "## Sessions replayed turn by turn (prefix cache; cost = uncached + 0.1 × cached)\n\n",
        );
        out.push_str("| transcript | turns | tokens direct | tokens ctxgate | cache hits direct | cache hits ctxgate | cost direct | cost ctxgate | cost saved | stage ms |\n|---|---|---|---|---|---|---|---|---|---|\n");
        let (direct, proxy) = r.replay_totals();
        let mut rows: Vec<_> = r
            .replays
            .iter()
            .map(|x| (x.name.as_str(), x.turns, x.direct, x.proxy, x.micros))
            .collect();
        rows.push((
            "**all**",
            r.replays.iter().map(|x| x.turns).sum(),
            direct,
            proxy,
            r.replays.iter().map(|x| x.micros).sum(),
        ));
        for (name, turns, d, p, micros) in rows {
            let saved = if d.cost() > 0.0 {
                100.0 * (1.0 - p.cost() / d.cost())
            } else {
                0.0
            };
            out.push_str(&format!(
                "| {name} | {turns} | {} | {} | {:.1} % | {:.1} % | {:.0} | {:.0} | {saved:.1} % | {:.1} |\n",
                d.tokens,
                p.tokens,
                d.hit_percent(),
                p.hit_percent(),
                d.cost(),
                p.cost(),
                ms(micros),
            ));
        }
        out.push_str(&format!(
            "\nRead again at full price after a cache break (the head or items an earlier turn sent, behind a change): \
             direct {} tokens ({:.1} % of its cost), ctxgate {} ({:.1} %).\n",
            direct.reread,
            direct.reread_percent(),
            proxy.reread,
            proxy.reread_percent(),
        ));
    }
    out
}

/// Where the transcripts' tokens are, by part: before, after, how much of the part went, and its share of what the
/// upstream still receives.
fn breakdown(b: &super::parts::Breakdown) -> String {
    use super::parts::Part;
    let left: usize = b.parts.iter().map(|p| p.after).sum();
    let mut out = String::from(
        "### Where the transcripts' tokens are (first seen, by part of the request)\n\n",
    );
    out.push_str("| part | tokens before | tokens after | fewer tokens | share of what is left |\n|---|---|---|---|---|\n");
    for (part, t) in Part::ALL.iter().zip(&b.parts) {
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} % | {} |\n",
            part.label(),
            t.before,
            t.after,
            percent_less(t.before, t.after),
            percent(t.after, left),
        ));
    }
    if b.folded > 0 {
        out.push_str(&format!(
            "\n{} folded transcript(s) left out: their items no longer pair with the original's.\n",
            b.folded
        ));
    }
    out.push('\n');
    out
}
