//! Where in a transcript an item may be compressed.
//!
//! The compress stage asks this for every candidate before it looks at the text: the frozen prefix (the first item)
//! and the user's most recent turns stay as the client sent them, tool outputs and the agent's tool loop are decided
//! at first sight. Deciding at first sight is what keeps a conversation's prefix byte-stable for the provider's
//! cache: an item compressed only later would change bytes the provider has already cached.

use super::prefix::Decided;
use crate::responses::shape::Shape;

/// Whether an item may be compressed at its position: tool outputs unless among the `protect_recent` last; steps of
/// the agent's tool loop unless in the frozen prefix (the first item); other live-zone items unless in the frozen
/// prefix or the most recent user turns.
pub(super) struct Positions {
    pub recent_outputs_from: usize,
    pub recent_turns_from: usize,
    /// By item from `steps_from` on: a step of the agent's tool loop ([`agent_steps`]). Earlier items were settled
    /// on an earlier turn and are not asked about.
    pub steps_from: usize,
    pub steps: Vec<bool>,
}

impl Positions {
    pub fn allows(&self, index: usize, shape: &Shape) -> bool {
        match shape {
            Shape::Output { function: true, .. } => index < self.recent_outputs_from,
            _ if self.is_step(index) => index > 0,
            _ => self.allows_live(index),
        }
    }

    /// Whether the item at `index` is a step of the agent's tool loop: allowed on every turn to come.
    pub fn is_step(&self, index: usize) -> bool {
        index
            .checked_sub(self.steps_from)
            .and_then(|i| self.steps.get(i).copied())
            .unwrap_or(false)
    }

    fn allows_live(&self, index: usize) -> bool {
        index > 0 && index < self.recent_turns_from
    }

    /// Whether every candidate a settled head let through is still let through (a transcript that lost items at
    /// its end may move the protected zone back over them).
    pub fn still_allow(&self, head: &Decided) -> bool {
        head.last_allowed_output
            .is_none_or(|i| i < self.recent_outputs_from)
            && head.last_allowed_live.is_none_or(|i| self.allows_live(i))
    }

    /// Whether `index` is kept verbatim by its position on every turn to come (the first item, frozen).
    pub fn forever_denied(index: usize, shape: &Shape) -> bool {
        index == 0 && !matches!(shape, Shape::Output { function: true, .. })
    }
}

/// Which items are steps of the agent's tool loop: an assistant message followed by a tool call before the next user
/// message (the model's notes on the way to the call, which come back in the same request as the call), and the
/// output of a tool other than a function (function outputs have their own rule, `protect_recent`). They are decided at first sight like function outputs: in an agent session the whole task is
/// one user turn, so waiting for them to leave the most recent user turns would keep every one of them verbatim, and
/// deciding them later would change a prefix the provider has already cached.
pub(super) fn agent_steps(shapes: &[Option<&Shape>]) -> Vec<bool> {
    let mut steps = vec![false; shapes.len()];
    let mut call_follows = false;
    for (i, shape) in shapes.iter().enumerate().rev() {
        match shape {
            Some(Shape::Call { .. }) => call_follows = true,
            Some(Shape::UserMessage { .. }) => call_follows = false,
            Some(Shape::AssistantMessage) => steps[i] = call_follows,
            Some(Shape::Output {
                function: false, ..
            }) => steps[i] = true,
            _ => {}
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> Shape {
        Shape::UserMessage {
            text: "task".into(),
        }
    }

    fn call() -> Shape {
        Shape::Call {
            call_id: "c".into(),
            name: "shell".into(),
            arguments: "{}".into(),
        }
    }

    fn output(function: bool) -> Shape {
        Shape::Output {
            call_id: "c".into(),
            function,
        }
    }

    fn steps_of(shapes: &[Shape]) -> Vec<bool> {
        agent_steps(&shapes.iter().map(Some).collect::<Vec<_>>())
    }

    #[test]
    fn notes_on_the_way_to_a_call_are_steps_and_a_chat_answer_is_not() {
        let shapes = [
            Shape::Instructions,
            user(),
            Shape::AssistantMessage, // answers the user: chat
            user(),
            Shape::AssistantMessage, // notes, then a call
            Shape::Other,            // reasoning between them
            call(),
            output(false),
            Shape::AssistantMessage, // the last answer
        ];
        assert_eq!(
            steps_of(&shapes),
            [false, false, false, false, true, false, false, true, false]
        );
    }

    #[test]
    fn steps_are_allowed_inside_the_recent_turns_and_chat_is_not() {
        let shapes = [
            user(),
            Shape::AssistantMessage,
            call(),
            output(false),
            Shape::AssistantMessage,
        ];
        let positions = Positions {
            recent_outputs_from: usize::MAX,
            recent_turns_from: 0,
            steps_from: 0,
            steps: steps_of(&shapes),
        };
        assert!(positions.allows(1, &shapes[1]));
        assert!(positions.allows(3, &shapes[3]));
        assert!(!positions.allows(4, &shapes[4]));
        // The first item is the frozen prefix whatever it is.
        assert!(!positions.allows(0, &Shape::AssistantMessage));
        // With the setting off there are no steps: the live zone keeps them all.
        let off = Positions {
            steps: Vec::new(),
            ..positions
        };
        assert!(!off.allows(1, &shapes[1]));
        assert!(!off.allows(3, &shapes[3]));
    }

    #[test]
    fn function_outputs_follow_protect_recent_only() {
        let positions = Positions {
            recent_outputs_from: 5,
            recent_turns_from: 0,
            steps_from: 0,
            steps: Vec::new(),
        };
        assert!(positions.allows(4, &output(true)));
        assert!(!positions.allows(5, &output(true)));
        assert!(!steps_of(&[user(), call(), output(true)])[2]);
    }
}
