//! The test oracle for the split: the serde_json scan `RequestBody::parse` ran before `responses::split`
//! replaced it, unchanged, and its result in the tests' shape.

use super::{Outcome, SplitInput};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// What one scan of the body finds: members as offsets into the body, `input` already split into items.
struct Scan<'de> {
    /// `None` for the `input` member, which is kept split into items.
    members: Vec<(std::borrow::Cow<'de, str>, Option<&'de RawValue>)>,
    /// Index into `members` of the first `input`, and its parsed form.
    input: Option<(usize, ScannedInput<'de>)>,
}

enum ScannedInput<'de> {
    Text(String),
    Items(Vec<&'de RawValue>),
    Other,
}

impl<'de> serde::Deserialize<'de> for Scan<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scan<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scan<'de>, A::Error> {
                let mut members = Vec::new();
                let mut input = None;
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == "input" && input.is_none() {
                        // Split into items in the same pass that finds the member's end.
                        input = Some((members.len(), map.next_value_seed(InputSeed)?));
                        members.push((key, None));
                    } else {
                        members.push((key, Some(map.next_value::<&'de RawValue>()?)));
                    }
                }
                Ok(Scan { members, input })
            }
        }
        d.deserialize_map(V)
    }
}

/// Reads the `input` member as a string or as a list of borrowed item slices.
struct InputSeed;

impl<'de> serde::de::DeserializeSeed<'de> for InputSeed {
    type Value = ScannedInput<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for InputSeed {
    type Value = ScannedInput<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string or an array of items")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(ScannedInput::Text(v.to_string()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(ScannedInput::Text(v))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(16));
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            items.push(item);
        }
        Ok(ScannedInput::Items(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(ScannedInput::Other)
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(ScannedInput::Other)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(ScannedInput::Other)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(ScannedInput::Other)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(ScannedInput::Other)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(ScannedInput::Other)
    }
}

/// What the replaced scan made of `body`.
pub(super) fn oracle(body: &[u8]) -> Outcome {
    let Ok(scan) = serde_json::from_slice::<Scan<'_>>(body) else {
        return Outcome::NotAnObject;
    };
    let base = body.as_ptr() as usize;
    let span = |raw: &RawValue| {
        let start = raw.get().as_ptr() as usize - base;
        start..start + raw.get().len()
    };
    let input = match scan.input {
        None => None,
        Some((_, ScannedInput::Other)) => return Outcome::BadInput,
        Some((at, ScannedInput::Text(t))) => Some((at, SplitInput::Text(t))),
        Some((at, ScannedInput::Items(items))) => {
            Some((at, SplitInput::Items(items.into_iter().map(span).collect())))
        }
    };
    let members = scan
        .members
        .into_iter()
        .map(|(k, raw)| (k.into_owned(), raw.map(span)))
        .collect();
    Outcome::Split { members, input }
}
