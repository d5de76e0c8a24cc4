//! Joins the writes of a streamed answer into fewer system calls on the client's connection.
//!
//! The HTTP client that reads the upstream hands its answer over one chunk per poll of its connection task, and an
//! upstream that streams SSE writes each event as its own chunk. The server connection flushes whenever the body
//! it relays has nothing ready, so without help a 12-event answer that arrived in one `recvfrom` leaves in 12
//! `writev`s — each a system call, a wake-up of the client, and the CPU that goes with them (nginx reads the same
//! answer in bulk and writes it once). Here, the first write of a batch steps aside once: it re-schedules the
//! connection's task instead of writing, which lets the upstream connection task (woken earlier, so first in the
//! queue) decode what it has already read; the server then buffers those chunks too and offers them all. A batch
//! is written as soon as stepping aside brought nothing new, so no timer is involved and nothing waits for data
//! that has not arrived: the cost is one pass of the scheduler per write, never latency the network did not
//! already impose.

use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A batch this large is written at once: holding more would only grow the server's buffers.
const MAX_HELD: usize = 64 * 1024;

/// At most this many steps aside per batch, so a stream that keeps trickling in is still written regularly.
const MAX_YIELDS: u8 = 32;

/// A listener whose connections coalesce their writes (see the module documentation).
pub struct Coalescing<L>(pub L);

impl<L: Listener> Listener for Coalescing<L> {
    type Io = WriteCoalesce<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = self.0.accept().await;
        (WriteCoalesce::new(io), addr)
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// One client connection's socket, whose writes step aside once per batch before they reach the socket.
pub struct WriteCoalesce<T> {
    inner: T,
    gate: Gate,
}

impl<T> WriteCoalesce<T> {
    pub fn new(inner: T) -> WriteCoalesce<T> {
        WriteCoalesce {
            inner,
            gate: Gate::default(),
        }
    }
}

/// The decision of when a write goes to the socket: plain data, so it is tested without a socket.
#[derive(Debug, Default)]
struct Gate {
    /// Bytes the held batch offered when it last stepped aside.
    held: Option<usize>,
    /// How often the current batch stepped aside.
    yields: u8,
    /// A write of the batch reached the socket but did not take all of it (or the socket was full): the rest is
    /// written without stepping aside again.
    draining: bool,
}

impl Gate {
    /// Whether a write of `offered` bytes should step aside (re-schedule and return `Pending`) instead of writing.
    fn step_aside(&mut self, offered: usize) -> bool {
        let grew = self.held.is_none_or(|held| offered > held);
        if offered == 0
            || self.draining
            || offered >= MAX_HELD
            || self.yields >= MAX_YIELDS
            || !grew
        {
            self.draining = true;
            return false;
        }
        self.held = Some(offered);
        self.yields += 1;
        true
    }

    /// What the socket did with a write of `offered` bytes.
    fn wrote(&mut self, offered: usize, result: &Poll<std::io::Result<usize>>) {
        match result {
            Poll::Ready(Ok(n)) if *n < offered => {}
            Poll::Pending => {}
            Poll::Ready(_) => *self = Gate::default(),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteCoalesce<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteCoalesce<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.gate.step_aside(buf.len()) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.gate.wrote(buf.len(), &result);
        result
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let offered = bufs.iter().map(|b| b.len()).sum();
        if this.gate.step_aside(offered) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.gate.wrote(offered, &result);
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn a_batch_steps_aside_while_it_grows_and_is_written_when_it_stops() {
        let mut gate = Gate::default();
        assert!(
            gate.step_aside(100),
            "the first write of a batch steps aside"
        );
        assert!(gate.step_aside(250), "more arrived meanwhile: once more");
        assert!(!gate.step_aside(250), "nothing new: written now");
        gate.wrote(250, &Poll::Ready(Ok(250)));
        assert!(gate.step_aside(40), "the next batch steps aside again");
    }

    #[test]
    fn a_partly_written_batch_is_finished_without_stepping_aside() {
        let mut gate = Gate::default();
        assert!(gate.step_aside(100));
        assert!(!gate.step_aside(100));
        gate.wrote(100, &Poll::Ready(Ok(60)));
        assert!(!gate.step_aside(40), "the rest goes out at once");
        gate.wrote(40, &Poll::Pending);
        assert!(
            !gate.step_aside(40),
            "a full socket does not restart the wait"
        );
        gate.wrote(40, &Poll::Ready(Ok(40)));
        assert!(gate.step_aside(10));
    }

    #[test]
    fn large_and_long_batches_are_written_without_waiting_longer() {
        let mut gate = Gate::default();
        assert!(
            !gate.step_aside(MAX_HELD),
            "a batch of the cap is written at once"
        );
        gate.wrote(MAX_HELD, &Poll::Ready(Ok(MAX_HELD)));
        assert!(!gate.step_aside(0), "an empty write is passed through");
        gate.wrote(0, &Poll::Ready(Ok(0)));
        let mut gate = Gate::default();
        let mut steps = 0;
        for size in 1.. {
            if !gate.step_aside(size) {
                break;
            }
            steps += 1;
        }
        assert_eq!(steps, usize::from(MAX_YIELDS), "a trickle is still written");
    }

    /// A socket that counts the writes reaching it, as strace would count `writev`s.
    struct Counted {
        io: tokio::io::DuplexStream,
        writes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl AsyncRead for Counted {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Counted {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            let this = self.get_mut();
            let result = Pin::new(&mut this.io).poll_write(cx, buf);
            if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
                this.writes
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            result
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.get_mut().io).poll_flush(cx)
        }

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
        }
    }

    /// A listener with one connection to hand out.
    struct One<Io>(Option<Io>);

    impl<Io: AsyncRead + AsyncWrite + Unpin + Send + 'static> Listener for One<Io> {
        type Io = Io;
        type Addr = std::net::SocketAddr;

        async fn accept(&mut self) -> (Io, std::net::SocketAddr) {
            match self.0.take() {
                Some(io) => (io, std::net::SocketAddr::from(([127, 0, 0, 1], 1))),
                None => std::future::pending().await,
            }
        }

        fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
            Ok(std::net::SocketAddr::from(([127, 0, 0, 1], 1)))
        }
    }

    /// Serves one streamed answer of 12 events that a producer task hands over one at a time through a one-slot
    /// channel (as the HTTP client hands over the upstream's chunks), and returns the answer as the client read
    /// it and the number of writes that reached the socket.
    async fn stream_twelve_events(coalesce: bool) -> (String, usize) {
        use axum::body::Body;
        let (client, server) = tokio::io::duplex(1 << 20);
        let writes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Counted {
            io: server,
            writes: writes.clone(),
        };
        let app = axum::Router::new().route(
            "/",
            axum::routing::get(|| async {
                let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(1);
                tokio::spawn(async move {
                    for i in 0..12 {
                        let event = format!("event: e{i}\ndata: {{\"n\":{i}}}\n\n");
                        if tx.send(bytes::Bytes::from(event)).await.is_err() {
                            return;
                        }
                    }
                });
                let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
                    rx.recv()
                        .await
                        .map(|chunk| (Ok::<_, std::io::Error>(chunk), rx))
                });
                Body::from_stream(chunks)
            }),
        );
        let server = if coalesce {
            tokio::spawn(async move { axum::serve(Coalescing(One(Some(counted))), app).await })
        } else {
            tokio::spawn(async move { axum::serve(One(Some(counted)), app).await })
        };
        let mut client = client;
        client
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).await.unwrap();
        server.abort();
        (
            String::from_utf8(answer).unwrap(),
            writes.load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    #[tokio::test]
    async fn events_handed_over_one_by_one_leave_in_one_write() {
        let (plain, plain_writes) = stream_twelve_events(false).await;
        let (joined, joined_writes) = stream_twelve_events(true).await;
        for i in 0..12 {
            assert!(joined.contains(&format!("event: e{i}\ndata: {{\"n\":{i}}}\n\n")));
        }
        let body = |answer: &str| answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned());
        assert_eq!(
            body(&joined),
            body(&plain),
            "the same bytes reach the client"
        );
        assert!(
            plain_writes >= 10,
            "without it, one write per event: {plain_writes}"
        );
        assert!(
            joined_writes <= 2,
            "with it, the events are joined: {joined_writes}"
        );
    }

    /// Through a real (in-memory) pipe: every byte arrives, in order, whatever way it was written.
    #[tokio::test]
    async fn bytes_pass_through_unchanged() {
        let (client, server) = tokio::io::duplex(64);
        let mut writer = WriteCoalesce::new(server);
        let sent: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let expected = sent.clone();
        let reader = tokio::spawn(async move {
            let mut client = client;
            let mut got = Vec::new();
            client.read_to_end(&mut got).await.unwrap();
            got
        });
        for piece in sent.chunks(777) {
            writer.write_all(piece).await.unwrap();
        }
        let empty = writer
            .write_vectored(&[IoSlice::new(b""), IoSlice::new(b"")])
            .await
            .unwrap();
        assert_eq!(empty, 0);
        writer.shutdown().await.unwrap();
        drop(writer);
        assert_eq!(reader.await.unwrap(), expected);
    }
}
