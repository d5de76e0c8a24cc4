//! Shared mock state: the request recording and the stream outcome counters.
//!
//! Tests assert on what the proxy really sent upstream (headers it stripped, bodies
//! it rewrote) and on whether it aborted upstream streams when its client left, so
//! both must be observable from outside the handlers: in process through
//! [`MockState`], out of process through `/__mock/*`.
//!
//! Counted as streams: SSE answers of `/v1/responses` and the bodies of
//! `/v1/mock/bytes`, `/v1/mock/echo` and `/v1/mock/stall`; plain JSON answers are not.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use axum::http::request::Parts;
use bytes::{Bytes, BytesMut};
use futures_util::Stream;

/// Bodies beyond this are counted but not kept, so multi-gigabyte passthrough
/// uploads cannot exhaust memory; every API-sized body fits well below it.
pub(crate) const RECORD_BODY_LIMIT: usize = 64 * 1024 * 1024;

/// One request as the mock received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// In arrival order, names lowercase, values lossily decoded as UTF-8.
    pub headers: Vec<(String, String)>,
    /// The body as read so far (complete once the handler consumed it; the
    /// `/v1/responses*` handlers always do before answering).
    pub body: Bytes,
    /// Full body length, which exceeds `body.len()` only past 64 MiB (kept bodies are capped).
    pub body_len: u64,
}

impl Recorded {
    /// Case-insensitive header lookup; first value wins.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON, for assertions on rewritten requests.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

#[derive(Debug)]
struct Entry {
    id: u64,
    rec: Recorded,
    body: BytesMut,
}

#[derive(Debug, Default)]
struct Inner {
    entries: Mutex<Vec<Entry>>,
    /// Only the last this many requests are kept (`None`: all of them until cleared).
    keep_last: Option<usize>,
    next_id: AtomicU64,
    cancelled: AtomicU64,
    completed: AtomicU64,
}

/// Cheap-to-clone handle on the recording and counters of one mock server.
#[derive(Debug, Clone, Default)]
pub struct MockState {
    inner: Arc<Inner>,
}

impl MockState {
    /// A recording that keeps only the last `keep_last` requests (all of them when `None`): a load benchmark sends
    /// hundreds of thousands, and keeping each one's body made the mock grow by gigabytes and spend the CPU it
    /// shares with what is measured on copying them.
    pub fn keeping_last(keep_last: Option<usize>) -> MockState {
        MockState {
            inner: Arc::new(Inner {
                keep_last,
                ..Inner::default()
            }),
        }
    }

    /// Every recorded request, oldest first.
    pub fn received(&self) -> Vec<Recorded> {
        self.entries()
            .iter()
            .map(|e| Recorded {
                body: Bytes::copy_from_slice(&e.body),
                ..e.rec.clone()
            })
            .collect()
    }

    /// Forgets recorded requests; the stream counters are kept, they are cumulative.
    pub fn clear(&self) {
        self.entries().clear();
    }

    /// Streams that ended because the client went away before the last byte.
    pub fn cancelled_streams(&self) -> u64 {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Streams whose last byte was handed to the connection.
    pub fn completed_streams(&self) -> u64 {
        self.inner.completed.load(Ordering::SeqCst)
    }

    pub(crate) fn request_count(&self) -> usize {
        self.entries().len()
    }

    /// A poisoned lock only means another handler panicked mid-update; the
    /// recording is still the best information available, so keep using it.
    fn entries(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.inner
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the request head as it arrives; the body is appended by [`RecordBody`].
    pub(crate) fn begin(&self, parts: &Parts) -> u64 {
        let id = self.inner.next_id.fetch_add(1, Ordering::SeqCst);
        let headers = parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let rec = Recorded {
            method: parts.method.as_str().to_owned(),
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().map(str::to_owned),
            headers,
            body: Bytes::new(),
            body_len: 0,
        };
        let mut entries = self.entries();
        entries.push(Entry {
            id,
            rec,
            body: BytesMut::new(),
        });
        if let Some(keep) = self.inner.keep_last {
            let excess = entries.len().saturating_sub(keep);
            entries.drain(..excess);
        }
        id
    }

    fn append(&self, id: u64, chunk: &[u8]) {
        let mut entries = self.entries();
        // Recent requests are at the end; a cleared entry is simply not found.
        if let Some(e) = entries.iter_mut().rev().find(|e| e.id == id) {
            e.rec.body_len += chunk.len() as u64;
            let room = RECORD_BODY_LIMIT.saturating_sub(e.body.len());
            e.body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
    }

    fn finish_stream(&self, completed: bool) {
        let counter = if completed {
            &self.inner.completed
        } else {
            &self.inner.cancelled
        };
        counter.fetch_add(1, Ordering::SeqCst);
    }
}

/// Request body wrapper that copies every chunk into the recording as the handler
/// reads it, so streaming handlers (digest, echo) still stream.
pub(crate) struct RecordBody<S> {
    inner: S,
    state: MockState,
    id: u64,
}

impl<S> RecordBody<S> {
    pub(crate) fn new(inner: S, state: MockState, id: u64) -> Self {
        Self { inner, state, id }
    }
}

impl<S, E> Stream for RecordBody<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    type Item = Result<Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        if let Poll::Ready(Some(Ok(chunk))) = &polled {
            self.state.append(self.id, chunk);
        }
        polled
    }
}

/// Response body wrapper that tells completed streams from abandoned ones: hyper
/// drops the body early when the client disconnects, and the drop guard sees that
/// the end was never reached.
pub(crate) struct Tracked<S> {
    inner: S,
    state: MockState,
    /// Bytes after which the stream counts as complete even if never polled to its
    /// end: with a `content-length`, hyper stops polling once that many were sent.
    expected: Option<u64>,
    sent: u64,
    done: bool,
}

impl<S> Tracked<S> {
    pub(crate) fn new(inner: S, state: MockState, expected: Option<u64>) -> Self {
        let mut tracked = Self {
            inner,
            state,
            expected,
            sent: 0,
            done: false,
        };
        // An empty fixed-length body is complete before hyper ever polls it.
        if expected == Some(0) {
            tracked.mark_done();
        }
        tracked
    }

    fn mark_done(&mut self) {
        if !self.done {
            self.done = true;
            self.state.finish_stream(true);
        }
    }
}

impl<S, E> Stream for Tracked<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    type Item = Result<Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(chunk))) => {
                self.sent += chunk.len() as u64;
                if self.expected.is_some_and(|n| self.sent >= n) {
                    self.mark_done();
                }
            }
            Poll::Ready(None) => self.mark_done(),
            Poll::Ready(Some(Err(_))) | Poll::Pending => {}
        }
        polled
    }
}

impl<S> Drop for Tracked<S> {
    fn drop(&mut self) {
        if !self.done {
            self.state.finish_stream(false);
        }
    }
}
