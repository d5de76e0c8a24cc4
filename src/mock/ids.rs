//! Deterministic identifiers, encodings and error bodies shared by the mock's routes.
//!
//! Everything the mock invents (ids, `created_at`, opaque blobs) derives from a hash
//! of the request body, so identical requests get identical bytes back and tests can
//! compare whole answers without masking clock- or counter-dependent fields.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Base of every `created_at`: a fixed instant, so answers never depend on the clock.
const EPOCH_BASE: u64 = 1_700_000_000;

/// Hash of one request body, the root of every value the mock makes up for it.
#[derive(Debug, Clone)]
pub(crate) struct Seed([u8; 32]);

impl Seed {
    pub(crate) fn of(body: &[u8]) -> Self {
        Self(Sha256::digest(body).into())
    }

    /// `prefix` + 48 hex chars (the length of real response ids), distinct per `label`
    /// so that items of one response do not share ids.
    pub(crate) fn id(&self, prefix: &str, label: &str) -> String {
        let mut h = Sha256::new();
        h.update(self.0);
        h.update(label.as_bytes());
        let hexed = hex(&h.finalize());
        format!("{prefix}{}", &hexed[..48])
    }

    /// A plausible unix time in late 2023/2024, stable for a given request.
    pub(crate) fn created_at(&self) -> u64 {
        let n = u32::from_be_bytes([self.0[0], self.0[1], self.0[2], self.0[3]]);
        EPOCH_BASE + u64::from(n % 50_000_000)
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Standard base64 with padding; hand-written because the crate carries no base64
/// dependency and the mock only needs to encode.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b0 = chunk.first().copied().unwrap_or(0);
        let b1 = chunk.get(1).copied().unwrap_or(0);
        let b2 = chunk.get(2).copied().unwrap_or(0);
        let n = (u32::from(b0) << 16) | (u32::from(b1) << 8) | u32::from(b2);
        let sextet = |shift: u32| char::from(ALPHABET[((n >> shift) & 0x3f) as usize]);
        out.push(sextet(18));
        out.push(sextet(12));
        out.push(if chunk.len() > 1 { sextet(6) } else { '=' });
        out.push(if chunk.len() > 2 { sextet(0) } else { '=' });
    }
    out
}

/// The OpenAI error envelope, so clients and the proxy parse mock errors like real ones.
pub(crate) fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

pub(crate) fn error_response(
    status: StatusCode,
    message: &str,
    kind: &str,
    code: Option<&str>,
) -> Response {
    json_response(status, &error_body(message, kind, code))
}

/// Serializes once with a fixed field order (`preserve_order`), keeping bytes stable.
pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut res = (status, body).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// Error type and code the real API uses for a given status, as far as they are known.
pub(crate) fn error_kind(status: u16) -> (&'static str, Option<&'static str>) {
    match status {
        400 => ("invalid_request_error", None),
        401 => ("invalid_request_error", Some("invalid_api_key")),
        403 => (
            "invalid_request_error",
            Some("unsupported_country_region_territory"),
        ),
        404 => ("invalid_request_error", Some("not_found")),
        409 => ("invalid_request_error", Some("conflict")),
        413 => ("invalid_request_error", Some("request_too_large")),
        429 => ("requests", Some("rate_limit_exceeded")),
        500 => ("server_error", Some("server_error")),
        502..=504 => ("server_error", Some("service_unavailable")),
        s if s >= 500 => ("server_error", Some("server_error")),
        _ => ("invalid_request_error", Some("mock_error")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn ids_are_stable_and_distinct_per_label() {
        let seed = Seed::of(b"{}");
        assert_eq!(seed.id("resp_", "a"), Seed::of(b"{}").id("resp_", "a"));
        assert_ne!(seed.id("resp_", "a"), seed.id("resp_", "b"));
        assert_eq!(seed.id("msg_", "a").len(), 4 + 48);
    }
}
