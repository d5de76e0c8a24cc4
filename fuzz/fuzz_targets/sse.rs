//! The SSE parser reads the upstream's stream in whatever pieces the network delivers: any bytes, split
//! anywhere, must parse to the same events without panicking.
#![no_main]

use ctxgate::expand::sse::SseParser;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, stream)) = data.split_first() else {
        return;
    };
    let mut whole = SseParser::new();
    let expected = whole.push(stream);
    let _ = whole.finish();
    let at = usize::from(cut) % (stream.len() + 1);
    let mut split = SseParser::new();
    let mut got = split.push(&stream[..at]);
    got.extend(split.push(&stream[at..]));
    let _ = split.finish();
    assert_eq!(expected, got, "events depend on where the stream was split");
});
