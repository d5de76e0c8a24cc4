//! The pure side of expansion: the `context_expand` tool and directive, how the model's hash argument becomes an
//! original, what window of it is returned, which tokens become keep-pattern suggestions, and — for turns where
//! the proxy answers expand calls itself — how upstream rounds are stitched into one client response. No I/O here:
//! `proxy::expand` wires these into the request path.

pub mod eager;
pub mod echo;
pub mod merge;
pub mod resolve;
pub mod skim;
pub mod sse;
pub mod stitch;
pub mod suggest;
pub mod tool;
pub mod window;
