//! Whether two versions of some source lines are the same code laid out differently.
//!
//! A formatter's diff (`ruff format --diff`, `black --diff`, `prettier` piped through `diff -u`, a `git diff` after
//! a mass reformat, `gofmt -d`) is mostly hunks whose code does not change at all: a call split over lines or
//! joined onto one, a trailing comma added, `'` turned into `"`. Shown whole, such a diff costs nearly what the
//! file does and tells a reader nothing but "reformatted". The diff compressor asks [`same_code`] about each hunk's
//! old and new side, and a hunk whose code is the same goes behind a marker (`layout only`). A false "same" would
//! hide a real change, the worst thing a diff's compression can do, so the comparison is a conservative one:
//! only known languages; each side's whitespace dropped outside strings and comments (one space kept where two
//! words would otherwise fuse, or two operators into another), trailing commas dropped where that cannot turn a
//! tuple into a parenthesis; strings kept verbatim (a quote style counts as layout only in Python and JS/TS, and
//! only where the string holds no quote), comments kept with their spaces collapsed; and in Python, where
//! indentation is syntax, each logical line's indentation kept. A side that ends inside a string, closes a bracket
//! it did not open or breaks a line inside a one-line string is never the same code.

/// A language whose layout the comparison knows: its strings, its comments, whether its indentation is syntax.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Lang {
    /// Strings `'` `"` and their triples, `#` comments, indentation is syntax.
    Python,
    /// JavaScript and TypeScript: strings `'` `"` and template literals, `//` comments.
    Js,
    /// Go: strings `"` and raw strings in backquotes, `'x'` runes, `//` comments.
    Go,
    /// Rust: strings `"` and raw strings `r#"…"#`, `'x'` chars beside `'a` lifetimes, `//` comments.
    Rust,
    /// C, C++, Java, Kotlin, C#, Swift: strings `"`, `'x'` chars, `//` comments.
    Brace,
}

impl Lang {
    /// The language of a file by its extension (`b/src/app.py`); `None` for any other file, whose hunks are
    /// never taken for layout only.
    pub(crate) fn of_path(path: &str) -> Option<Lang> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        Some(match ext.to_ascii_lowercase().as_str() {
            "py" | "pyi" => Lang::Python,
            "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" => Lang::Js,
            "go" => Lang::Go,
            "rs" => Lang::Rust,
            "c" | "h" | "cc" | "cpp" | "hpp" | "java" | "kt" | "cs" | "swift" => Lang::Brace,
            _ => return None,
        })
    }

    fn opens_string(self, c: char) -> bool {
        match self {
            Lang::Python => c == '\'' || c == '"',
            Lang::Js => c == '\'' || c == '"' || c == '`',
            Lang::Go => c == '"' || c == '`',
            Lang::Rust | Lang::Brace => c == '"',
        }
    }

    /// Whether `'…'` and `"…"` are one string to the language (a formatter swaps them freely).
    fn quote_style_is_layout(self) -> bool {
        matches!(self, Lang::Python | Lang::Js)
    }

    fn comment(self) -> &'static str {
        if self == Lang::Python { "#" } else { "//" }
    }
}

/// Whether `old` and `new` (a hunk's lines on each side, without their `-`/`+`/` ` prefix) are the same code once
/// layout is set aside. Either side empty, or both the same text, is not a layout change.
pub(crate) fn same_code(old: &[&str], new: &[&str], lang: Lang) -> bool {
    if old.is_empty() || new.is_empty() || old == new {
        return false;
    }
    match (normal(&old.join("\n"), lang), normal(&new.join("\n"), lang)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Characters of a word: two of them with whitespace between stay apart (`a b` is not `ab`). Any non-ASCII
/// character counts, to be safe.
fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || !c.is_ascii()
}

/// Pairs of operator characters that whitespace keeps apart as two tokens and that fuse into one without it
/// (`a - -b` is not `a--b`, `a < -b` is not Go's `a <- b`).
const FUSING: &[&str] = &[
    "++", "--", "&&", "||", "<<", ">>", "//", "/*", "*/", "**", "==", "!=", "<=", ">=", "=>", "->",
    "::", "..", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", ":=", "??", "?.", "<-", "&^",
];

/// Words after which an opening bracket is not a call's or a subscript's: `return (x,)` is a tuple.
const KEYWORDS: &[&str] = &[
    "and", "as", "assert", "await", "break", "case", "const", "continue", "default", "defer",
    "del", "delete", "elif", "else", "except", "for", "from", "go", "if", "import", "in", "is",
    "lambda", "let", "loop", "match", "move", "mut", "new", "not", "of", "or", "print", "raise",
    "ref", "return", "select", "static", "switch", "throw", "typeof", "var", "void", "while",
    "with", "yield",
];

/// Words after which a line break ends a statement in JS and Go (`return` then `x` on the next line returns
/// nothing).
const LINE_ENDS: &[&str] = &["return", "throw", "break", "continue", "yield"];

/// An open bracket: the character closing it, whether it follows an operand (a call's `(`, a subscript's `[`),
/// and the commas at its level so far.
struct Open {
    close: char,
    kind: char,
    operand: bool,
    commas: usize,
}

/// The last word of `code`, when it ends with one.
fn last_word(code: &str) -> &str {
    let start = code
        .char_indices()
        .rev()
        .take_while(|&(_, c)| is_word(c))
        .last()
        .map_or(code.len(), |(i, _)| i);
    &code[start..]
}

/// The normal form of a side: its code with layout set aside, or `None` when the side is not whole code (an
/// unclosed string, a closing bracket without its opening one).
fn normal(text: &str, lang: Lang) -> Option<String> {
    let cs: Vec<char> = text.chars().collect();
    let comment: Vec<char> = lang.comment().chars().collect();
    let mut code = String::with_capacity(text.len());
    let mut open: Vec<Open> = Vec::new();
    // Whitespace skipped since the last token, and whether it held a line break.
    let (mut gap, mut gap_newline) = (false, false);
    let mut line_start = true;
    // The line before ended in `\`: this one goes on with its logical line.
    let mut continued = false;
    let mut i = 0;
    while i < cs.len() {
        if line_start {
            line_start = false;
            if lang == Lang::Python {
                // A new logical line: its indentation is syntax, written into the normal form.
                let lead = cs[i..]
                    .iter()
                    .take_while(|&&c| c == ' ' || c == '\t' || c == '\x0c')
                    .count();
                let blank = matches!(cs.get(i + lead), None | Some('\n' | '\r' | '#'));
                if open.is_empty() && !continued && !blank {
                    code.push('\n');
                    code.extend(&cs[i..i + lead]);
                    i += lead;
                    gap = false;
                }
            }
            continued = false;
            continue;
        }
        let c = cs[i];
        if c.is_whitespace() {
            gap = true;
            if c == '\n' {
                gap_newline = true;
                line_start = true;
            }
            i += 1;
            continue;
        }
        if cs[i..].starts_with(&comment) {
            // A comment is kept, its runs of spaces collapsed, and ends with its line.
            let end = cs[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(cs.len(), |p| i + p);
            let words: Vec<String> = cs[i..end]
                .iter()
                .collect::<String>()
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            code.push_str(&words.join(" "));
            code.push('\n');
            (gap, gap_newline) = (false, false);
            i = end;
            continue;
        }
        let prev = code.chars().last();
        if gap {
            let keep_apart = match prev {
                Some(p) if is_word(p) => is_word(c) || lang.opens_string(c),
                Some(p) => FUSING.iter().any(|f| {
                    let mut f = f.chars();
                    f.next() == Some(p) && f.next() == Some(c)
                }),
                None => false,
            };
            let ends_statement = gap_newline
                && matches!(lang, Lang::Js | Lang::Go)
                && (LINE_ENDS.contains(&last_word(&code))
                    || code.ends_with("++")
                    || code.ends_with("--"));
            if ends_statement {
                code.push('\n');
            } else if keep_apart {
                code.push(' ');
            }
        }
        (gap, gap_newline) = (false, false);
        let prev = code.chars().last();
        if let Some((token, end)) = literal(&cs, i, lang) {
            code.push_str(&token?);
            i = end;
            continue;
        }
        match c {
            '(' | '[' | '{' => {
                let operand = match prev {
                    Some(p) if is_word(p) => !KEYWORDS.contains(&last_word(&code)),
                    Some(p) => matches!(p, ')' | ']' | '}' | '"' | '\'' | '`'),
                    None => false,
                };
                let close = match c {
                    '(' => ')',
                    '[' => ']',
                    _ => '}',
                };
                open.push(Open {
                    close,
                    kind: c,
                    operand,
                    commas: 0,
                });
                code.push(c);
            }
            ')' | ']' | '}' => {
                if open.pop()?.close != c {
                    return None;
                }
                code.push(c);
            }
            ',' => {
                let next = cs[i + 1..].iter().find(|c| !c.is_whitespace());
                let top = open.last_mut();
                // A trailing comma is layout, except the one that makes a one-element tuple (`(x,)` after no
                // call, Python's `a[x,]`).
                let trailing = top.as_ref().is_some_and(|t| {
                    next == Some(&t.close)
                        && (t.commas > 0
                            || match t.kind {
                                '(' => t.operand,
                                '[' => !t.operand,
                                _ => true,
                            })
                });
                if let Some(t) = top {
                    t.commas += 1;
                }
                if !trailing {
                    code.push(',');
                }
            }
            '\\' if lang == Lang::Python => {
                let rest = &cs[i + 1..];
                continued = rest.starts_with(&['\n']) || rest.starts_with(&['\r', '\n']);
                code.push(c);
            }
            _ => code.push(c),
        }
        i += 1;
    }
    Some(code)
}

/// The literal starting at `i`, if one does: its normal form (`None` when it does not close) and the index after
/// it. Strings keep their text verbatim; where quote style is layout, a `'…'` string holding no quote is written
/// `"…"`.
fn literal(cs: &[char], i: usize, lang: Lang) -> Option<(Option<String>, usize)> {
    let c = cs[i];
    let verbatim = |end: usize| Some((Some(cs[i..end].iter().collect()), end));
    let word_before = |k: usize| k > 0 && is_word(cs[k - 1]);
    let raw_prefix = !word_before(i) || i > 0 && cs[i - 1] == 'b' && !word_before(i - 1);
    if lang == Lang::Rust && c == 'r' && raw_prefix {
        // A raw string: `r"…"`, `r#"…"#`, no escapes.
        let hashes = cs[i + 1..].iter().take_while(|&&c| c == '#').count();
        if cs.get(i + 1 + hashes) != Some(&'"') {
            return None;
        }
        let body = i + 2 + hashes;
        let end = (body..cs.len()).find(|&j| {
            cs[j] == '"'
                && cs.len() >= j + 1 + hashes
                && cs[j + 1..j + 1 + hashes].iter().all(|&c| c == '#')
        });
        return match end {
            Some(j) => verbatim(j + 1 + hashes),
            None => Some((None, cs.len())),
        };
    }
    if c == '\'' && matches!(lang, Lang::Rust | Lang::Go | Lang::Brace) {
        // A character (`'x'`, `'"'`, `'\n'`, `'\u{1F600}'`); a lone `'` is a lifetime's (`'a`).
        if cs.get(i + 1) == Some(&'\\') {
            let end = (i + 3..cs.len().min(i + 14)).find(|&j| cs[j] == '\'' || cs[j] == '\n');
            return match end {
                Some(j) if cs[j] == '\'' => verbatim(j + 1),
                _ => Some((None, cs.len())),
            };
        }
        if cs.get(i + 2) == Some(&'\'') && cs.get(i + 1) != Some(&'\n') {
            return verbatim(i + 3);
        }
        return None;
    }
    if !lang.opens_string(c) {
        return None;
    }
    let triple = lang == Lang::Python && cs[i..].starts_with(&[c, c, c]);
    let width = if triple { 3 } else { 1 };
    // Go's raw strings have no escapes; a JS template literal may span lines.
    let raw = lang == Lang::Go && c == '`';
    let multiline = triple || c == '`';
    let mut j = i + width;
    let end = loop {
        match cs.get(j) {
            None => return Some((None, cs.len())),
            Some('\\') if !raw => j += 2,
            Some('\n') if !multiline => return Some((None, cs.len())),
            Some(&q) if q == c && cs[j..].starts_with(&vec![c; width]) => break j,
            Some(_) => j += 1,
        }
    };
    let body = &cs[i + width..end.min(cs.len())];
    let holds_quote = body
        .iter()
        .enumerate()
        .any(|(k, &b)| b == '"' || b == '\\' && matches!(body.get(k + 1), Some('\'' | '"')));
    if c == '\'' && lang.quote_style_is_layout() && !holds_quote {
        let q = "\"".repeat(width);
        let text: String = body.iter().collect();
        return Some((Some(format!("{q}{text}{q}")), end + width));
    }
    verbatim(end + width)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(old: &str, new: &str, lang: Lang) -> bool {
        let old: Vec<&str> = old.split('\n').collect();
        let new: Vec<&str> = new.split('\n').collect();
        same_code(&old, &new, lang)
    }

    #[test]
    fn languages_by_extension() {
        assert_eq!(Lang::of_path("b/src/app.py"), Some(Lang::Python));
        assert_eq!(Lang::of_path("lib/core/Axios.JS"), Some(Lang::Js));
        assert_eq!(Lang::of_path("x.tsx"), Some(Lang::Js));
        assert_eq!(Lang::of_path("main.go"), Some(Lang::Go));
        assert_eq!(Lang::of_path("src/lib.rs"), Some(Lang::Rust));
        assert_eq!(Lang::of_path("a/b.hpp"), Some(Lang::Brace));
        assert_eq!(Lang::of_path("run.sh"), None);
        assert_eq!(Lang::of_path("Makefile"), None);
        assert_eq!(Lang::of_path("docs.py/README"), None);
    }

    #[test]
    fn a_call_joined_or_split_is_layout() {
        let split = "result = compute(\n    first_argument,\n    second_argument,\n)";
        let joined = "result = compute(first_argument, second_argument)";
        assert!(same(split, joined, Lang::Python));
        assert!(same(joined, split, Lang::Python));
        assert!(same(
            "const x = foo(a,\n  b);",
            "const x = foo(\n  a,\n  b,\n);",
            Lang::Js
        ));
        assert!(same(
            "fn f(a: u32, b: u32) -> u32 { a + b }",
            "fn f(a: u32, b: u32) -> u32 {\n    a + b\n}",
            Lang::Rust
        ));
    }

    #[test]
    fn quote_style_is_layout_only_in_python_and_js() {
        assert!(same("x = 'abc'", "x = \"abc\"", Lang::Python));
        assert!(same("x = '\\x00'", "x = \"\\x00\"", Lang::Python));
        assert!(same("d = '''doc'''", "d = \"\"\"doc\"\"\"", Lang::Python));
        assert!(same("const x = 'abc';", "const x = \"abc\";", Lang::Js));
        for lang in [Lang::Rust, Lang::Brace, Lang::Go] {
            assert!(!same("x = 'abc';", "x = \"abc\";", lang), "{lang:?}");
        }
        // A string holding a quote keeps its own delimiter: the two are different texts to compare.
        assert!(!same(
            "s = 'say \"hi\"'",
            "s = \"say \\\"hi\\\"\"",
            Lang::Python
        ));
        assert!(!same("s = 'it\\'s'", "s = \"its\"", Lang::Python));
    }

    #[test]
    fn a_trailing_comma_is_layout_but_not_a_tuples() {
        assert!(same("foo(a, b)", "foo(a, b,)", Lang::Python));
        assert!(same("foo(a)", "foo(\n    a,\n)", Lang::Python));
        assert!(same("x = [1, 2]", "x = [\n    1,\n    2,\n]", Lang::Python));
        assert!(same(
            "let v = vec![1, 2];",
            "let v = vec![1, 2,];",
            Lang::Rust
        ));
        assert!(same("x := T{a: 1}", "x := T{\n\ta: 1,\n}", Lang::Go));
        assert!(!same("x = (a,)", "x = (a)", Lang::Python));
        assert!(!same("return (a,)", "return (a)", Lang::Python));
        assert!(!same("y = m[i,]", "y = m[i]", Lang::Python));
        assert!(!same("let t = (a,);", "let t = (a);", Lang::Rust));
    }

    #[test]
    fn words_that_fuse_are_not_layout() {
        assert!(!same("a b", "ab", Lang::Python));
        assert!(!same("x = a - -b", "x = a--b", Lang::Js));
        assert!(!same("x = a < -b", "x = a <-b", Lang::Go));
        assert!(!same("s = f \"x\"", "s = f\"x\"", Lang::Python));
        assert!(same("x = a+b", "x = a + b", Lang::Js));
    }

    #[test]
    fn a_changed_token_is_not_layout() {
        assert!(!same("foo(a, b)", "foo(a, c)", Lang::Python));
        assert!(!same("n = 100", "n = 1000", Lang::Python));
        assert!(!same("if a < b {", "if a <= b {", Lang::Go));
        assert!(!same("x = a + b;", "x = a - b;", Lang::Brace));
    }

    #[test]
    fn whitespace_inside_a_string_is_data() {
        assert!(!same("x = 'a  b'", "x = 'a b'", Lang::Python));
        assert!(!same("x = \"a b\"", "x = \"ab\"", Lang::Rust));
        assert!(!same("s := `a\n b`", "s := `a\nb`", Lang::Go));
        assert!(!same(
            "d = \"\"\"\n    doc\n\"\"\"",
            "d = \"\"\"\ndoc\n\"\"\"",
            Lang::Python
        ));
    }

    #[test]
    fn python_indentation_of_a_logical_line_is_code() {
        assert!(!same(
            "if ok:\n        return x",
            "if ok:\n    return x",
            Lang::Python
        ));
        assert!(!same(
            "if ok:\n    a()\n    b()",
            "if ok:\n    a()\nb()",
            Lang::Python
        ));
        // The same code split at another logical line is not the same program.
        assert!(!same("f\n(x)(y)", "f(x)\n(y)", Lang::Python));
    }

    #[test]
    fn python_continuation_lines_reindented_are_layout() {
        assert!(same(
            "    x = foo(a,\n            b)\n    y = 2",
            "    x = foo(a,\n        b)\n    y = 2",
            Lang::Python
        ));
        assert!(same(
            "    total = a + \\\n            b",
            "    total = a + \\\n        b",
            Lang::Python
        ));
    }

    #[test]
    fn a_comments_text_is_code() {
        assert!(!same(
            "x = 1  # old note",
            "x = 1  # new note",
            Lang::Python
        ));
        assert!(!same("x(); // old", "x(); // new", Lang::Js));
        assert!(same("x = 1 #  note", "x = 1  # note", Lang::Python));
        // Code moved into a comment is not layout.
        assert!(!same("// note\nfoo();", "// note foo();", Lang::Js));
    }

    #[test]
    fn an_unclosed_string_or_bracket_is_not_layout() {
        assert!(!same("x = 'abc", "x = 'abc ", Lang::Python));
        assert!(!same("x = \"\"\"abc", "x =  \"\"\"abc", Lang::Python));
        assert!(!same("    b)\nfoo()", "    b)\nfoo( )", Lang::Python));
        assert!(!same("x = (a]", "x = ( a]", Lang::Python));
    }

    #[test]
    fn rust_lifetimes_and_chars_do_not_open_strings() {
        assert!(same(
            "fn f<'a>(x: &'a str) -> char { '\"' }",
            "fn f<'a>(x: &'a str) -> char {\n    '\"'\n}",
            Lang::Rust
        ));
        assert!(!same("let c = ' ';", "let c = '';", Lang::Rust));
        assert!(!same(
            "let s = r#\"a \"b\"#;",
            "let s = r#\"a \"  b\"#;",
            Lang::Rust
        ));
    }

    #[test]
    fn a_line_break_after_return_ends_it_in_js() {
        assert!(!same("return\nx;", "return x;", Lang::Js));
    }

    #[test]
    fn empty_or_identical_sides_are_not_layout() {
        assert!(!same_code(&[], &["x = 1"], Lang::Python));
        assert!(!same_code(&["x = 1"], &[], Lang::Python));
        assert!(!same_code(&["x = 1"], &["x = 1"], Lang::Python));
    }
}
