//! Configuration files printed whole: the settings stay, the commentary goes behind markers.
//!
//! A system's default configuration (`postgresql.conf`, `/etc/login.defs`, `sshd_config`, `redis.conf`, `php.ini`)
//! is mostly comments: the documentation of every option, and the options left at their defaults, commented out.
//! Comments read as source to the detector, so such a file used to stay whole — thousands of tokens for the dozen
//! lines that are set. An agent printing one wants those: here every line that is not a comment stays (settings,
//! section headers, includes), and so does a comment line with an error word (the floor), a keep-pattern hit or a
//! word of the task. Each run of other comment lines becomes one marker line, which names the commented-out
//! settings in it (`#port = 5432` → `port`), so the model knows an option is there, at its default, before it
//! edits the file; expanding the marker, or a `query` on it, gives the lines back.
//!
//! Only a text that is mostly comments and whose other lines all read as settings is taken for one: a script's
//! lines (`if …`, `def …`, `echo "$x"`, calls) are not settings, and a text opening with `#!` is a script.

use super::relevance::is_floor_line;
use super::{Ctx, Tally, Unit};

/// A configuration file has at least this many non-blank lines: a short one costs little as it is.
const MIN_LINES: usize = 40;
/// At least this share (in percent) of its non-blank lines are comments.
const MIN_COMMENT_PERCENT: usize = 60;
/// Its other lines read as settings, all but one in twenty.
const MAX_OTHER_PER_20: usize = 1;
/// A comment run needs this many non-blank lines to go behind a marker: one line costs what its marker does.
const MIN_RUN: usize = 2;
/// A marker names at most this many of the commented-out settings behind it, then counts the rest.
const NAMED: usize = 3;
/// At most one comment line in this many has an error word: a configuration's commentary explains options, while
/// a test harness's `#` lines (prove's `#   Failed test`, `# Error: syntax error at …`) are its diagnostics.
const MAX_DIAGNOSTIC_COMMENTS_PER_10: usize = 10;
/// Longer lines are no setting (a setting is a key and a value, perhaps a short comment after them).
const MAX_SETTING_LINE: usize = 240;

/// First words that open code, not a setting.
const CODE_WORDS: [&str; 38] = [
    "if", "then", "else", "elif", "fi", "for", "while", "do", "done", "case", "esac", "function",
    "return", "def", "class", "import", "from", "try", "except", "with", "raise", "fn", "let",
    "const", "var", "use", "pub", "struct", "enum", "impl", "match", "func", "package", "export",
    "local", "echo", "printf", "print",
];

/// Whether `text` is a configuration file that is mostly comments ([`MIN_COMMENT_PERCENT`] of at least
/// [`MIN_LINES`] non-blank lines), whose other lines all read as settings ([`is_setting`]).
pub(crate) fn is_config(text: &str) -> bool {
    if text.trim_start().starts_with("#!") {
        return false;
    }
    let (mut nonblank, mut comments, mut other) = (0usize, 0usize, 0usize);
    let mut diagnostics = 0usize;
    for line in text.split('\n') {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        nonblank += 1;
        if is_comment(t) {
            comments += 1;
            diagnostics += usize::from(is_floor_line(line));
        } else if !is_setting(t) {
            other += 1;
            // A log or a program's output fails here within its first lines.
            if other > 2 && other * 20 > nonblank * MAX_OTHER_PER_20 {
                return false;
            }
        }
    }
    nonblank >= MIN_LINES
        && comments * 100 >= nonblank * MIN_COMMENT_PERCENT
        && other * 20 <= nonblank * MAX_OTHER_PER_20
        && diagnostics * MAX_DIAGNOSTIC_COMMENTS_PER_10 <= comments
}

/// Compresses a configuration file ([`is_config`]): comment runs behind markers, everything else as it is.
pub(crate) fn compress(text: &str, ctx: &Ctx, tally: &mut Tally) -> Option<String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let keep: Vec<bool> = lines
        .iter()
        .map(|line| {
            let t = line.trim();
            t.is_empty() || !is_comment(t) || is_floor_line(line) || held(line, ctx)
        })
        .collect();
    let mut out = String::with_capacity(text.len() / 4);
    let mut dropped = 0;
    let mut i = 0;
    while i < lines.len() {
        if keep[i] {
            push_line(&mut out, lines[i]);
            i += 1;
            continue;
        }
        // A run: comment lines and the blank lines among them, up to the next line that stays.
        let start = i;
        while i < lines.len() && (!keep[i] || lines[i].trim().is_empty()) {
            i += 1;
        }
        // Blank lines after the run's last comment stay with what follows.
        let mut end = i;
        while end > start && lines[end - 1].trim().is_empty() {
            end -= 1;
        }
        let run = &lines[start..end];
        if run.iter().filter(|l| !l.trim().is_empty()).count() < MIN_RUN {
            run.iter().for_each(|l| push_line(&mut out, l));
        } else {
            let mut line = ctx.marker(run.len(), Unit::Lines);
            line.push_str(&commented_out_note(run));
            push_line(&mut out, &line);
            tally.add(Unit::Lines, run.len());
            dropped += run.len();
        }
        lines[end..i].iter().for_each(|l| push_line(&mut out, l));
    }
    // `push_line` ends every line with a newline, the split's last piece too (the empty one after a final newline,
    // or a last line without one): the text joined its pieces with one newline fewer.
    out.pop();
    (dropped > 0 && out.len() < text.len()).then_some(out)
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    out.push('\n');
}

/// A keep-pattern or task-word hit holds a comment line where it is.
fn held(line: &str, ctx: &Ctx) -> bool {
    if ctx.matcher.is_empty() {
        return false;
    }
    ctx.matcher.scan(line.as_bytes()).holds()
}

/// A comment line (`# …`, `; …`), not a C preprocessor line, a Rust attribute (`#include`, `#[derive]`) or a
/// numbered stack frame (a sanitizer's or gdb's `#0 0x7fc1338b89cf in malloc`).
fn is_comment(t: &str) -> bool {
    const DIRECTIVES: [&str; 10] = [
        "#include", "#define", "#if", "#endif", "#else", "#elif", "#pragma", "#undef", "#[", "#!",
    ];
    let numbered = super::regions::shared::after_frame_number(t).is_some();
    (t.starts_with('#') && !numbered && !DIRECTIVES.iter().any(|d| t.starts_with(d)))
        || t.starts_with(';')
}

/// A line that reads as a setting: a section header (`[mysqld]`, `<Directory /srv>`), the end of a block, a
/// list item, or a key — a word of letters, digits and `._-/@*$` — with its value (`port = 5432`, `MAIL_DIR
/// /var/mail`, `listen: 8080`, `worker_processes auto;`) or alone (a flag). A first word that opens code, or a
/// call (`f(x)`), is no key.
fn is_setting(t: &str) -> bool {
    if t.len() > MAX_SETTING_LINE {
        return false;
    }
    if (t.starts_with('[') && t.ends_with(']')) || (t.starts_with('<') && t.ends_with('>')) {
        return true;
    }
    if matches!(t, "}" | "};" | "{") || t.starts_with("- ") {
        return true;
    }
    let key_end = t
        .find(|c: char| c.is_whitespace() || c == '=' || c == ':')
        .unwrap_or(t.len());
    let key = &t[..key_end];
    is_key(key) && !CODE_WORDS.contains(&key)
}

fn is_key(word: &str) -> bool {
    let mut chars = word.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || "._-/@*$".contains(c))
}

/// ` (commented out: port, listen_addresses, +5)` for a run holding commented-out settings, else nothing.
fn commented_out_note(run: &[&str]) -> String {
    let keys: Vec<&str> = run.iter().filter_map(|l| commented_out_key(l)).collect();
    if keys.is_empty() {
        return String::new();
    }
    let mut note = String::from(" (commented out: ");
    note.push_str(&keys[..keys.len().min(NAMED)].join(", "));
    if keys.len() > NAMED {
        note.push_str(&format!(", +{}", keys.len() - NAMED));
    }
    note.push(')');
    note
}

/// The key of a commented-out setting: a comment sign directly followed by a key and its value (`#port = 5432`,
/// `#PermitRootLogin prohibit-password`, `;extension=bz2`). Prose after a comment sign and a space (`# see "man
/// tcp"`) is no setting.
fn commented_out_key(line: &str) -> Option<&str> {
    let t = line.trim();
    let rest = t.strip_prefix('#').or_else(|| t.strip_prefix(';'))?;
    let key_end = rest.find(|c: char| c.is_whitespace() || c == '=')?;
    let (key, value) = rest.split_at(key_end);
    let value = value.trim_start_matches(|c: char| c.is_whitespace() || c == '=');
    // The value's first word, before any comment after it.
    let value = value.split('#').next().unwrap_or("").trim();
    (is_key(key)
        && !CODE_WORDS.contains(&key)
        && !value.is_empty()
        && value.split_whitespace().count() <= 4)
        .then_some(key)
}

#[cfg(test)]
mod tests {
    use super::super::{Options, compress as compress_text};
    use super::*;

    /// A default configuration in the shape of PostgreSQL's: a header, sections of documented options left
    /// at their defaults, a few set.
    fn postgres_like() -> String {
        let mut t = String::from(
            "# -----------------------------\n# PostgreSQL configuration file\n# -----------------------------\n#\n# This file consists of lines of the form:\n#\n#   name = value\n#\n",
        );
        for section in ["CONNECTIONS", "RESOURCES", "WRITE-AHEAD LOG", "REPLICATION"] {
            t.push_str(&format!(
                "\n#----------\n# {section}\n#----------\n\n# - Settings -\n\n"
            ));
            for k in 0..8 {
                t.push_str(&format!(
                    "#{}_option_{k} = {k}\t\t# what it does;\n\t\t\t\t\t# (change requires restart)\n",
                    section.to_lowercase().replace([' ', '-'], "_")
                ));
            }
            t.push_str(&format!(
                "{}_set = on\t\t\t# set by the installer\n",
                section.to_lowercase().replace([' ', '-'], "_")
            ));
        }
        t.push_str("\n# Shown when a connection attempt failed:\n#log_connections = off\n");
        t
    }

    #[test]
    fn a_commented_default_configuration_keeps_its_settings_and_names_what_is_commented_out() {
        let text = postgres_like();
        assert!(is_config(&text));
        let out = compress_text(&text, &Options::default())
            .map(|c| c.text)
            .unwrap_or_default();
        // Every setting that is on stays, as the exact line.
        for line in text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim().starts_with('#'))
        {
            assert!(out.lines().any(|l| l == line), "{line}\n{out}");
        }
        // A comment with an error word stays (the floor); the commentary goes, naming the options behind it.
        assert!(
            out.contains("\n# Shown when a connection attempt failed:\n"),
            "{out}"
        );
        assert!(!out.contains("(change requires restart)"), "{out}");
        assert!(
            out.contains("(commented out: connections_option_0, connections_option_1, connections_option_2, +5)"),
            "{out}"
        );
        assert!(out.len() * 3 < text.len(), "{out}");
        // The text's end stays as it was: one final newline, or none.
        assert!(
            out.ends_with("#log_connections = off\n") || out.ends_with(")\n"),
            "{out:?}"
        );
        assert!(!out.ends_with("\n\n"), "{out:?}");
        let bare = compress_text(text.trim_end(), &Options::default())
            .map(|c| c.text)
            .unwrap_or_default();
        assert!(!bare.ends_with('\n') && !bare.is_empty(), "{bare:?}");
    }

    #[test]
    fn a_task_word_holds_its_comment_line() {
        let text = postgres_like();
        let opts = Options {
            query: vec!["replication_option_3".into()],
            ..Options::default()
        };
        let out = compress_text(&text, &opts)
            .map(|c| c.text)
            .unwrap_or_default();
        assert!(
            out.contains("\n#replication_option_3 = 3\t\t# what it does;\n"),
            "{out}"
        );
    }

    #[test]
    fn scripts_source_and_logs_are_no_configuration() {
        // A shell script with more comments than commands: it opens with `#!`, and its lines are code.
        let mut script = String::from("#!/bin/sh\n");
        let mut unmarked = String::new();
        for k in 0..30 {
            script.push_str(&format!(
                "# step {k}: explain it\n# more about it\nrun_step {k}\n"
            ));
            unmarked.push_str(&format!(
                "# step {k}: explain it\n# more about it\nif [ -f /tmp/{k} ]; then\n  echo \"{k}\"\nfi\n"
            ));
        }
        assert!(!is_config(&script));
        assert!(!is_config(&unmarked));
        // Commented Python calls stay source.
        let python = (0..30)
            .map(|k| format!("# compute {k}\n# and keep it\nvalues.append(compute({k}))\n"))
            .collect::<String>();
        assert!(!is_config(&python));
        // A C file's preprocessor lines are no comments.
        let c = (0..40)
            .map(|k| format!("#include <h{k}.h>\n"))
            .collect::<String>();
        assert!(!is_config(&c));
        // A sanitizer's report: its numbered frames are no comments.
        let frames = (0..40)
            .map(|k| format!("    #{k} 0x564bdd7f7cc9 in parse_{k} cJSON.c:{k}\n"))
            .collect::<String>();
        assert!(!is_config(&format!(
            "==1==ERROR: LeakSanitizer: detected memory leaks\n\n{frames}"
        )));
        // A Perl test's diagnostics under prove: `#` lines, most of them with an error word, and a few lines of
        // the harness's own, which read like settings (`Failed 64/64 subtests`).
        let mut prove = String::from("t/10_base.t .. \n");
        for k in 0..40 {
            prove.push_str(&format!(
                "# Global symbol \"$sep\" requires explicit package name at lib/Text/CSV_PP.pm line {k}.\n"
            ));
            if k % 4 == 0 {
                prove.push_str(&format!(
                    "#   Failed test 'use Text::CSV;'\n#   at t/1{k}_base.t line 10.\n"
                ));
            }
        }
        prove.push_str("Dubious, test returned 255 (wstat 65280, 0xff00)\nFailed 64/64 subtests\n");
        assert!(!is_config(&prove));
        // Too short to be worth it.
        assert!(!is_config("# a\n# b\nkey = 1\n"));
    }

    #[test]
    fn commented_out_settings_are_told_from_prose() {
        assert_eq!(
            commented_out_key("#port = 5432\t\t\t\t# (change requires restart)"),
            Some("port")
        );
        assert_eq!(
            commented_out_key("#PermitRootLogin prohibit-password"),
            Some("PermitRootLogin")
        );
        assert_eq!(commented_out_key(";extension=bz2"), Some("extension"));
        assert_eq!(commented_out_key("# see \"man tcp\" for details"), None);
        assert_eq!(
            commented_out_key("#   Directory where mailboxes reside, _or_ name of file"),
            None
        );
        assert_eq!(
            commented_out_key("#MAIL_FILE      .mail"),
            Some("MAIL_FILE")
        );
    }
}
