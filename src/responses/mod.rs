//! A typed view of a Responses API request body that keeps the client's bytes.
//!
//! Prompt caching keys on exact prefix bytes, so a rewrite must change only what it means to change. The body is
//! parsed into its top-level members as raw JSON slices, in the client's order; `input` items are kept as raw
//! slices too. A stage replaces individual items (or members); serialization writes every untouched slice back
//! verbatim, and a body nobody changed is sent as the original bytes.
//!
//! The facts every stage of a turn reads about the body live here too, computed one way: the canonical identity
//! of an item and the conversation anchor ([`identity`]), and the token estimate with the within-budget decision
//! ([`estimate`]).

pub mod body;
pub mod estimate;
pub mod identity;
pub mod known;
pub mod shape;
pub mod split;

pub use body::{Input, Item, RequestBody};
