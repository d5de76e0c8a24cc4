//! A download through the proxy streams: memory does not grow with the body's size. Alone in its own test binary so
//! no other test's allocations disturb the measurement.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::*;
use futures_util::StreamExt;

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_mb_download_does_not_grow_memory_by_200_mb() {
    let (_mock, proxy) = mock_and_proxy().await;
    const N: u64 = 200 * 1024 * 1024;
    let before = rss_bytes();
    let resp = client()
        .get(proxy.v1(&format!("/mock/bytes?n={N}")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut total = 0u64;
    let mut peak = before;
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        total += chunk.unwrap().len() as u64;
        if total % (16 * 1024 * 1024) < 65536 {
            peak = peak.max(rss_bytes());
        }
    }
    peak = peak.max(rss_bytes());
    assert_eq!(total, N);
    let growth = peak.saturating_sub(before);
    assert!(growth < 64 * 1024 * 1024, "RSS grew by {growth} bytes");
    proxy.stop().await;
}
