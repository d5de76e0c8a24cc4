//! The upstream's answer on its way to the client. A stream may run for as long as the model writes, but an
//! upstream that falls silent must not hold a client (and a worker's connection) forever: each chunk has to arrive
//! within the idle timeout, or the stream ends with an error and the client sees a truncated body, never an
//! invented ending. Chunks that are already here are joined into one write on the way, since an upstream that sends
//! each SSE event as its own chunk would otherwise cost a write to the client per event.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;

use super::BodyStream;

/// Largest run of already-arrived chunks joined into one write to the client.
const COALESCE_MAX: usize = 64 * 1024;

/// Wraps a byte stream so that each chunk must arrive within `idle` of the previous one.
///
/// Chunks that are ready are joined into one (up to 64 KiB) before they are handed on, so an upstream that writes
/// each SSE event as its own chunk costs fewer writes to the client when the events arrive together; nothing ever
/// waits for more data to join, so no delay is added. (The HTTP client hands over one decoded chunk per poll of its
/// connection task, so in practice chunks join only when that task got ahead.) One idle timer, re-armed only when
/// the relay has to wait: a chunk already there costs no timer.
pub fn idle_guarded<S, E>(inner: S, idle: Duration) -> BodyStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    Box::pin(IdleGuarded {
        inner: Box::pin(inner),
        idle,
        timer: Box::pin(tokio::time::sleep(idle)),
        armed: false,
        held: None,
        joined: None,
        failed: None,
        done: false,
    })
}

struct IdleGuarded<S> {
    inner: Pin<Box<S>>,
    idle: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
    /// Whether `timer` counts the current wait (it is re-armed when a wait starts).
    armed: bool,
    /// The first chunk held back for joining (kept as it is when nothing joins it).
    held: Option<Bytes>,
    /// Chunks joined so far, when more than one arrived.
    joined: Option<bytes::BytesMut>,
    /// An error met while joining, handed on after what was joined.
    failed: Option<std::io::Error>,
    done: bool,
}

impl<S> IdleGuarded<S> {
    fn held_len(&self) -> usize {
        self.joined
            .as_ref()
            .map_or_else(|| self.held.as_ref().map_or(0, Bytes::len), |j| j.len())
    }

    fn hold(&mut self, chunk: Bytes) {
        match (&mut self.joined, self.held.take()) {
            (Some(joined), _) => joined.extend_from_slice(&chunk),
            (None, None) => self.held = Some(chunk),
            (None, Some(first)) => {
                let mut joined = bytes::BytesMut::with_capacity(first.len() + chunk.len());
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&chunk);
                self.joined = Some(joined);
            }
        }
    }

    fn take(&mut self) -> Option<Bytes> {
        match self.joined.take() {
            Some(joined) => Some(joined.freeze()),
            None => self.held.take(),
        }
    }
}

impl<S, E> Stream for IdleGuarded<S>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = self.get_mut();
        if let Some(e) = this.failed.take() {
            this.done = true;
            return Poll::Ready(Some(Err(e)));
        }
        if this.done {
            return Poll::Ready(this.take().map(Ok));
        }
        loop {
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    this.armed = false;
                    this.hold(chunk);
                    if this.held_len() >= COALESCE_MAX {
                        return Poll::Ready(this.take().map(Ok));
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    let e = std::io::Error::other(e.to_string());
                    match this.take() {
                        Some(chunk) => {
                            this.failed = Some(e);
                            return Poll::Ready(Some(Ok(chunk)));
                        }
                        None => {
                            this.done = true;
                            return Poll::Ready(Some(Err(e)));
                        }
                    }
                }
                Poll::Ready(None) => {
                    this.done = true;
                    return Poll::Ready(this.take().map(Ok));
                }
                Poll::Pending if this.held.is_some() || this.joined.is_some() => {
                    return Poll::Ready(this.take().map(Ok));
                }
                Poll::Pending => {
                    if !this.armed {
                        this.armed = true;
                        let deadline = tokio::time::Instant::now() + this.idle;
                        this.timer.as_mut().reset(deadline);
                    }
                    if this.timer.as_mut().poll(cx).is_ready() {
                        this.done = true;
                        let idle = this.idle;
                        let e = std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("upstream idle for {idle:?}"),
                        );
                        return Poll::Ready(Some(Err(e)));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;
    use futures_util::StreamExt;

    #[tokio::test]
    async fn ready_chunks_are_joined_and_an_error_still_ends_the_stream() {
        let chunks: Vec<Result<Bytes, String>> = vec![
            Ok(Bytes::from_static(b"event: a\n\n")),
            Ok(Bytes::from_static(b"event: b\n\n")),
            Err("cut".into()),
        ];
        let mut relayed = idle_guarded(futures_util::stream::iter(chunks), Duration::from_secs(1));
        let first = relayed.next().await.unwrap().unwrap();
        assert_eq!(first, Bytes::from_static(b"event: a\n\nevent: b\n\n"));
        assert!(
            relayed.next().await.unwrap().is_err(),
            "the cut reaches the client"
        );
        assert!(relayed.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_upstream_is_cut_after_the_idle_timeout() {
        let silent = futures_util::stream::pending::<Result<Bytes, String>>();
        let mut relayed = idle_guarded(silent, Duration::from_secs(5));
        let err = relayed.next().await.unwrap().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert!(relayed.next().await.is_none());
    }
}
