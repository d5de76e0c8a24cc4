//! What the stage holds of an item while it decides, and what it keeps after. A candidate's texts are each known
//! (compressed on an earlier turn), fresh (compressible, awaiting the conversation-wide decision of
//! [`super::decide`]) or verbatim; the item then ends as a compressed form that does not depend on where it stands,
//! so every later turn — and the settled head a turn replays — puts the same bytes back in its place, as long as the
//! outputs it points back to still stand before it.

use serde_json::Value;

use super::forms::{Fresh, MarkerUse};
use crate::responses::shape::Shape;

/// One text of a candidate item, as this turn sees it.
pub(super) enum TextState {
    /// Compressed on an earlier turn (or just now): these bytes replace it.
    Known(String, MarkerUse),
    /// Compressible, awaiting the conversation-wide decision.
    Fresh(Fresh),
    /// Sent as it is.
    Verbatim,
}

/// A candidate item whose decision is made this turn.
pub(super) struct Pending<'a> {
    pub(super) index: usize,
    pub(super) memo_key: u128,
    /// Sent verbatim on earlier turns while its position protected it: the provider has cached it as it was.
    pub(super) late: bool,
    pub(super) value: &'a Value,
    pub(super) shape: &'a Shape,
    pub(super) tool: &'a str,
    pub(super) seam: &'static str,
    /// Texts this long or longer are looked at (and rewritten).
    pub(super) text_min: usize,
    pub(super) texts: Vec<(String, TextState)>,
    /// Earlier items (index, content key) that a text's compressed form may point back to.
    pub(super) sources: Vec<(usize, u128)>,
    /// A store fault left a text verbatim this turn: the decision is not remembered, the next turn tries again.
    pub(super) faulted: bool,
}

/// An item's compressed form, independent of where in the transcript it stands.
#[derive(Debug)]
pub(super) struct Compression {
    value: Value,
    /// `value`'s JSON, written the first time the form is sent: every later turn sends these bytes again.
    encoded: std::sync::OnceLock<bytes::Bytes>,
    pub(super) markers: Vec<MarkerUse>,
    /// Earlier items (index, content key) the form points back to ([`crate::ctxzip::repeats`]): it stands only
    /// where they stand before it, the same.
    pub(super) sources: Vec<(usize, u128)>,
}

impl Compression {
    pub(super) fn new(
        value: Value,
        markers: Vec<MarkerUse>,
        sources: Vec<(usize, u128)>,
    ) -> Compression {
        Compression {
            value,
            encoded: std::sync::OnceLock::new(),
            markers,
            sources,
        }
    }

    /// The form as the bytes sent upstream (shared, written once).
    pub(super) fn encoded(&self) -> bytes::Bytes {
        self.encoded
            .get_or_init(|| crate::responses::body::encode(&self.value))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_is_written_once_and_sent_as_the_same_bytes_on_every_turn() {
        let value = serde_json::json!({"type":"function_call_output","call_id":"c","output":"<<ctxzip:0123456789ab 9_lines>>"});
        let form = Compression::new(value.clone(), Vec::new(), Vec::new());
        let first = form.encoded();
        let later = form.encoded();
        assert_eq!(first.as_ptr(), later.as_ptr(), "written once, shared after");
        assert_eq!(
            serde_json::from_slice::<Value>(&first).ok(),
            Some(value),
            "the bytes are the form"
        );
    }
}
