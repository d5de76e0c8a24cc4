//! Request bodies for the split's property tests: JSON text written piece by piece (so escapes, whitespace and
//! number shapes are chosen, not left to a serializer), and the ways to damage one.

use proptest::prelude::*;
use proptest::sample::Index;

fn ws() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just(String::new()),
        1 => prop::collection::vec(prop::sample::select(vec![" ", "\n", "\t", "\r", "  "]), 1..4)
            .prop_map(|w| w.concat()),
    ]
}

/// A piece of a string's content as written in JSON.
fn string_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z0-9 .,:{}\\[\\]/'-]{0,16}",
        2 => prop::sample::select(vec!["\\n", "\\\"", "\\\\", "\\/", "\\t", "\\r", "\\b", "\\f"])
            .prop_map(str::to_string),
        // Tool output that is itself JSON, escaped once more.
        1 => Just(r#"{\"a\": [1, \"b\\\\c\"], \"d\": \"\\u00e9\"}\n"#.to_string()),
        1 => any::<u16>().prop_map(|u| format!("\\u{u:04x}")),
        1 => (0xd800u16..0xdc00, 0xdc00u16..0xe000).prop_map(|(h, l)| format!("\\u{h:04X}\\u{l:04x}")),
        1 => (0xd800u16..0xe000).prop_map(|u| format!("\\u{u:04x}")),
        1 => "[éß中😀\u{2028}\u{7f}]{1,3}",
        1 => (1usize..10).prop_map(|n| "\\\\".repeat(n)),
    ]
}

fn json_string() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::collection::vec(string_piece(), 0..6),
        1 => prop::collection::vec(string_piece(), 10..80),
    ]
    .prop_map(|p| format!("\"{}\"", p.concat()))
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "-?(0|[1-9][0-9]{0,20})(\\.[0-9]{1,6})?([eE][+-]?[0-9]{1,3})?",
        1 => prop::sample::select(vec!["-0", "0", "1e400", "-1e400", "1E-400", "123456789012345678901234567890", "0.0"])
            .prop_map(str::to_string),
    ]
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => json_string(),
        2 => number(),
        1 => prop::sample::select(vec!["true", "false", "null"]).prop_map(str::to_string),
    ]
}

fn array_of(inner: impl Strategy<Value = String>, most: usize) -> impl Strategy<Value = String> {
    (prop::collection::vec((ws(), inner, ws()), 0..most), ws()).prop_map(|(items, w)| {
        let items: Vec<String> = items.into_iter().map(|(a, v, b)| a + &v + &b).collect();
        if items.is_empty() {
            format!("[{w}]")
        } else {
            format!("[{}]", items.join(","))
        }
    })
}

fn object_of(
    member: impl Strategy<Value = (String, String)>,
    most: usize,
) -> impl Strategy<Value = String> {
    (
        prop::collection::vec((ws(), member, ws(), ws()), 0..most),
        ws(),
    )
        .prop_map(|(members, w)| {
            let members: Vec<String> = members
                .into_iter()
                .map(|(a, (k, v), b, c)| format!("{a}{k}{b}:{c}{v}"))
                .collect();
            if members.is_empty() {
                format!("{{{w}}}")
            } else {
                format!("{{{}{w}}}", members.join(","))
            }
        })
}

/// Nested far deeper than any recursive parser allows.
fn deep() -> impl Strategy<Value = String> {
    (1usize..600, any::<bool>()).prop_map(|(n, arrays)| {
        if arrays {
            format!("{}{}", "[".repeat(n), "]".repeat(n))
        } else {
            format!("{}0{}", "{\"k\":".repeat(n), "}".repeat(n))
        }
    })
}

pub(crate) fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![30 => leaf(), 1 => deep()];
    leaf.prop_recursive(5, 40, 6, |inner| {
        prop_oneof![
            array_of(inner.clone(), 6),
            object_of((json_string(), inner), 6),
        ]
    })
}

/// The keys members get: mostly ordinary, often `input` in one spelling or another.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "\"model\"", "\"tools\"", "\"instructions\"", "\"stream\"", "\"\"", "\"t\\u00e9\"",
        ])
        .prop_map(str::to_string),
        2 => prop::sample::select(vec![
            "\"input\"", "\"inp\\u0075t\"", "\"\\u0069nput\"", "\"Input\"", "\"input \"",
        ])
        .prop_map(str::to_string),
        1 => json_string(),
    ]
}

/// What an `input` member holds: mostly a list of items, sometimes a string or something else.
fn input_value() -> impl Strategy<Value = String> {
    let field = prop::sample::select(vec!["\"type\"", "\"role\"", "\"content\"", "\"output\""]);
    let item = object_of((field.prop_map(str::to_string), value()), 5);
    prop_oneof![
        6 => array_of(prop_oneof![6 => item, 1 => value()], 10),
        2 => json_string(),
        1 => value(),
    ]
}

pub(crate) fn body() -> impl Strategy<Value = String> {
    let member = prop_oneof![
        3 => (key(), value()),
        2 => (Just("\"input\"".to_string()), input_value()),
    ];
    (ws(), object_of(member, 8), ws()).prop_map(|(a, o, b)| a + &o + &b)
}

/// One way to damage a body.
#[derive(Clone, Debug)]
pub(crate) enum Damage {
    /// A byte replaced.
    Flip(Index, u8),
    /// Bytes inserted.
    Insert(Index, Vec<u8>),
    Remove(Index),
    /// A space inserted (harmless between tokens and inside strings).
    Space(Index),
    Truncate(Index),
    /// Bytes put where a 64-byte block begins or ends (`at` picks the block, `offset` the side).
    AtBoundary(Index, i8, Vec<u8>),
}

/// Bytes that change how a body reads.
fn nasty() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::sample::select(
            b"\"\\{}[],: \t\n\r\x00\x01\x0b\x1f\x7f\x80\xbf\xc3\xe2\xf0\xffeE+-.0123456789tnfu"
                .to_vec()
        )
        .prop_map(|b| vec![b]),
        prop::sample::select(vec![
            &b"\\x"[..],
            b"\\u12",
            b"\\u12g4",
            b"\\ud800",
            b"\\\"",
            b"\\\\\\",
            b"\xc3\xa9",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"}",
            b"]",
            b",}",
            b"garbage",
            b"1e400",
            b"\"input\":{\"a\":1}",
            b"\"input\":5",
        ])
        .prop_map(<[u8]>::to_vec),
        (1usize..8).prop_map(|n| vec![b'\\'; n]),
    ]
}

pub(crate) fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<Index>(), nasty().prop_map(|b| b[0])).prop_map(|(i, b)| Damage::Flip(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Damage::Flip(i, b)),
        (any::<Index>(), nasty()).prop_map(|(i, b)| Damage::Insert(i, b)),
        any::<Index>().prop_map(Damage::Remove),
        any::<Index>().prop_map(Damage::Space),
        any::<Index>().prop_map(Damage::Truncate),
        (any::<Index>(), -8i8..8, nasty()).prop_map(|(i, o, b)| Damage::AtBoundary(i, o, b)),
    ]
}

pub(crate) fn apply(body: &mut Vec<u8>, damage: &Damage) {
    let len = body.len();
    let pick = |i: &Index| if len == 0 { 0 } else { i.index(len) };
    match damage {
        Damage::Flip(i, b) => {
            if len > 0 {
                body[pick(i)] = *b;
            }
        }
        Damage::Insert(i, bytes) => {
            let at = pick(i);
            body.splice(at..at, bytes.iter().copied());
        }
        Damage::Remove(i) => {
            if len > 0 {
                body.remove(pick(i));
            }
        }
        Damage::Space(i) => body.insert(pick(i), b' '),
        Damage::Truncate(i) => body.truncate(pick(i)),
        Damage::AtBoundary(i, offset, bytes) => {
            let blocks = len / 64 + 1;
            let boundary = (i.index(blocks) * 64) as isize + *offset as isize;
            let at = boundary.clamp(0, len as isize) as usize;
            // Replace what stands there, so the bytes land exactly on the boundary.
            let end = (at + bytes.len()).min(len);
            body.splice(at..end, bytes.iter().copied());
        }
    }
}
