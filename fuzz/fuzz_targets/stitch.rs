//! The stream stitcher rewrites the upstream's events for the client: any bytes, in any pieces, over any number
//! of rounds, must never panic.
#![no_main]

use ctxgate::expand::stitch::Stitcher;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut stitcher = Stitcher::new("context_expand");
    for (i, piece) in data.split(|b| *b == 0).enumerate() {
        let _ = stitcher.push(piece);
        if i % 7 == 6 {
            let _ = stitcher.end_round();
            stitcher.begin_round();
        }
    }
    let _ = stitcher.end_round();
    let _ = stitcher.finish();
});
