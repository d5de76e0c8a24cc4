//! The end of the walk: the split handed to the body view, or why the body is refused. The body must have closed
//! its object and be UTF-8 throughout; a string `input` is decoded here; an `input` that is neither a string nor an
//! array is [`BodyError::BadInput`] only where the serde_json scan this replaced would have said so
//! ([`Walk::bad_input`]), so a client sees the same refusal whichever scan read its body.

use std::ops::Range;

use super::{Expect, Fault, Split, SplitInput, Walk, first_non_utf8};
use crate::responses::body::BodyError;

const NOT_UTF8: &str = "a byte that is not UTF-8";

impl Walk<'_> {
    pub(super) fn finish(mut self) -> Result<Split, BodyError> {
        let len = self.body.len();
        if let Some(start) = self.utf8_run.take() {
            self.check_utf8(start..len);
        }
        match self.expect {
            Expect::End => {}
            Expect::Body => {
                return Err(Fault {
                    at: len,
                    what: "no object (an empty body)",
                }
                .into());
            }
            _ => {
                return Err(Fault {
                    at: len,
                    what: "the body ends inside its object",
                }
                .into());
            }
        }
        let Some(at) = self.input else {
            self.utf8_ok()?;
            return Ok(Split {
                members: self.members,
                input: None,
                verified: None,
            });
        };
        let span = self.members.get(at).map_or(0..0, |m| m.1.clone());
        let raw = self.body.get(span.clone()).unwrap_or_default();
        let input = match raw.first() {
            Some(b'"') => {
                self.utf8_ok()?;
                // The one value decoded here; serde_json also refuses a lone surrogate in it, as it did.
                let text = serde_json::from_slice::<String>(raw).map_err(|e| {
                    BodyError::NotAnObject(format!("`input` at byte {}: {e}", span.start))
                })?;
                SplitInput::Text(text)
            }
            Some(b'[') => {
                self.utf8_ok()?;
                SplitInput::Items(std::mem::take(&mut self.items))
            }
            _ => return Err(self.bad_input(raw, span)),
        };
        let verified = match input {
            SplitInput::Items(_) => self.verified.take(),
            SplitInput::Text(_) => None,
        };
        Ok(Split {
            members: self.members,
            input: Some((at, input)),
            verified,
        })
    }

    fn utf8_ok(&self) -> Result<(), BodyError> {
        match self.utf8_error {
            Some(at) => Err(Fault { at, what: NOT_UTF8 }.into()),
            None => Ok(()),
        }
    }

    /// The error for an `input` that is neither a string nor an array. The replaced scan read such a value with
    /// `deserialize_any` before refusing it, and that read could itself fail; those failures stay
    /// [`BodyError::NotAnObject`]: a number out of `f64` range, and in an object a key that is not a valid string
    /// (the object's values it skipped without a UTF-8 check, so the bytes of an object are exempt from it).
    fn bad_input(&self, raw: &[u8], span: Range<usize>) -> BodyError {
        let refused = |e: serde_json::Error| {
            BodyError::NotAnObject(format!("`input` at byte {}: {e}", span.start))
        };
        if raw.first() == Some(&b'{') {
            let before = self
                .body
                .get(..span.start)
                .and_then(|b| first_non_utf8(b, 0));
            let after = self
                .body
                .get(span.end..)
                .and_then(|b| first_non_utf8(b, span.end));
            if let Some(at) = before.or(after) {
                return Fault { at, what: NOT_UTF8 }.into();
            }
            type Keys = std::collections::BTreeMap<String, serde::de::IgnoredAny>;
            if let Err(e) = serde_json::from_slice::<Keys>(raw) {
                return refused(e);
            }
        } else {
            if let Err(e) = self.utf8_ok() {
                return e;
            }
            if matches!(raw.first(), Some(b'-' | b'0'..=b'9')) {
                if let Err(e) = serde_json::from_slice::<serde_json::Value>(raw) {
                    return refused(e);
                }
            }
        }
        BodyError::BadInput
    }
}
