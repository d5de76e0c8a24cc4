//! Which headers cross the proxy.
//!
//! A reverse proxy forwards end-to-end headers and drops hop-by-hop ones (RFC 9110 §7.6.1): those that describe
//! one connection, plus any the `Connection` header names. `Host` is rewritten by the client library for the
//! upstream. Everything else — `Authorization`, `OpenAI-*`, `Accept-Encoding`, unknown headers — goes through
//! unchanged, in both directions.

use axum::http::{HeaderMap, HeaderName, header};

const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    HeaderName::from_static("keep-alive"),
];

fn connection_listed(headers: &HeaderMap) -> Vec<HeaderName> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect()
}

/// Removes hop-by-hop headers in place.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for name in connection_listed(headers) {
        headers.remove(name);
    }
    for name in HOP_BY_HOP.iter() {
        headers.remove(name);
    }
    headers.remove("proxy-connection");
}

/// The headers to send upstream for a client request.
pub fn upstream_request_headers(client: &HeaderMap) -> HeaderMap {
    let mut out = client.clone();
    strip_hop_by_hop(&mut out);
    out.remove(header::HOST);
    out
}

/// The headers to return to the client for an upstream response.
pub fn client_response_headers(upstream: &HeaderMap) -> HeaderMap {
    let mut out = upstream.clone();
    strip_hop_by_hop(&mut out);
    out
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;

    #[test]
    fn drops_hop_by_hop_and_connection_listed() {
        let mut h = HeaderMap::new();
        h.insert(header::CONNECTION, "keep-alive, x-private".parse().unwrap());
        h.insert("x-private", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert(header::HOST, "proxy".parse().unwrap());
        h.insert(header::AUTHORIZATION, "Bearer k".parse().unwrap());
        h.insert("openai-beta", "x".parse().unwrap());
        let out = upstream_request_headers(&h);
        assert!(out.get("x-private").is_none());
        assert!(out.get("keep-alive").is_none());
        assert!(out.get(header::HOST).is_none());
        assert_eq!(out.get(header::AUTHORIZATION).unwrap(), "Bearer k");
        assert_eq!(out.get("openai-beta").unwrap(), "x");
    }
}
