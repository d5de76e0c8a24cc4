//! Who is calling: the tenant every stored record is scoped to, and the credential sent upstream.
//!
//! By default the client's own `Authorization` goes upstream untouched and the tenant is a hash of it. When the
//! proxy holds the upstream key (`[upstream] api_key_env`), clients must present one of `[auth] keys`; ctxgate
//! then sends its own key upstream and the tenant is a hash of the client's key. The key itself is never stored or
//! logged — only the hash.

use axum::http::{HeaderMap, HeaderValue, header};
use sha2::{Digest, Sha256};

use super::error::ProxyError;

/// A tenant id: 16 hex characters of a salted SHA-256 of the caller's credential.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tenant(String);

impl Tenant {
    pub fn from_credential(credential: &[u8]) -> Tenant {
        let mut h = Sha256::new();
        h.update(b"ctxgate-tenant-v1\0");
        h.update(credential);
        Tenant(crate::responses::identity::hex(&h.finalize()[..8]))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Tenant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The authenticated caller of one request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub tenant: Tenant,
    /// What to send as `Authorization` upstream (`None`: send none).
    pub upstream_auth: Option<HeaderValue>,
}

impl Caller {
    /// Headers for a call ctxgate makes upstream on this caller's behalf (a fold's summary, an expand round):
    /// the upstream credential and the OpenAI account-scoping headers the client sent.
    pub fn identity_headers(&self, client: &HeaderMap) -> HeaderMap {
        let mut out = HeaderMap::new();
        if let Some(auth) = &self.upstream_auth {
            out.insert(header::AUTHORIZATION, auth.clone());
        }
        for name in ["openai-organization", "openai-project"] {
            if let Some(v) = client.get(name) {
                out.insert(name, v.clone());
            }
        }
        out
    }
}

#[derive(Clone)]
enum Mode {
    /// Forward the client's credential.
    Forward,
    /// Send ctxgate's own key; accept only the listed client keys.
    ProxyHeld {
        upstream: HeaderValue,
        accepted: Vec<Vec<u8>>,
    },
}

#[derive(Clone)]
pub struct Credentials {
    mode: Mode,
}

impl Credentials {
    pub fn forward() -> Credentials {
        Credentials {
            mode: Mode::Forward,
        }
    }

    /// Proxy-held mode with the upstream key's value and the accepted client keys.
    pub fn proxy_held(upstream_key: &str, accepted: &[String]) -> Result<Credentials, ProxyError> {
        let mut upstream = HeaderValue::from_str(&format!("Bearer {}", upstream_key.trim()))
            .map_err(|_| {
                ProxyError::Misconfigured("the upstream key is not a valid header value".into())
            })?;
        upstream.set_sensitive(true);
        Ok(Credentials {
            mode: Mode::ProxyHeld {
                upstream,
                accepted: accepted.iter().map(|k| k.as_bytes().to_vec()).collect(),
            },
        })
    }

    pub fn is_proxy_held(&self) -> bool {
        matches!(self.mode, Mode::ProxyHeld { .. })
    }

    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, ProxyError> {
        let presented = headers.get(header::AUTHORIZATION);
        match &self.mode {
            Mode::Forward => Ok(Caller {
                tenant: Tenant::from_credential(presented.map(|v| v.as_bytes()).unwrap_or(b"")),
                upstream_auth: presented.cloned(),
            }),
            Mode::ProxyHeld { upstream, accepted } => {
                let key = bearer(headers).ok_or(ProxyError::Unauthorized)?;
                if !accepted.iter().any(|k| constant_time_eq(k, key.as_bytes())) {
                    return Err(ProxyError::Unauthorized);
                }
                Ok(Caller {
                    tenant: Tenant::from_credential(key.as_bytes()),
                    upstream_auth: Some(upstream.clone()),
                })
            }
        }
    }
}

/// The operator keys (`[auth] admin_keys`) that open the view across tenants. Separate from [`Credentials`]: an
/// operator key names no tenant and is never sent upstream; a client key never opens the operator view.
#[derive(Clone, Default)]
pub struct AdminKeys {
    keys: Vec<Vec<u8>>,
}

impl AdminKeys {
    pub fn new(keys: &[String]) -> AdminKeys {
        AdminKeys {
            keys: keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
        }
    }

    /// Lets the request through when it presents `Authorization: Bearer <an admin key>`. No key configured: the view
    /// is off ([`ProxyError::AdminDisabled`]); no credential: [`ProxyError::Unauthorized`]; another credential (a
    /// client's key included): [`ProxyError::AdminOnly`].
    pub fn check(&self, headers: &HeaderMap) -> Result<(), ProxyError> {
        if self.keys.is_empty() {
            return Err(ProxyError::AdminDisabled);
        }
        let key = bearer(headers).ok_or(ProxyError::Unauthorized)?;
        if self
            .keys
            .iter()
            .any(|k| constant_time_eq(k, key.as_bytes()))
        {
            Ok(())
        } else {
            Err(ProxyError::AdminOnly)
        }
    }
}

/// The key of an `Authorization: Bearer <key>` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
}

/// Compares without an early exit, so response time does not reveal how much of a key matched.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #![expect(
        clippy::unwrap_used,
        reason = "a test fails loudly on what it did not expect"
    )]
    use super::*;

    fn with_auth(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, v.parse().unwrap());
        h
    }

    #[test]
    fn tenant_is_a_hash_not_the_key() {
        let c = Credentials::forward()
            .authenticate(&with_auth("Bearer sk-secret"))
            .unwrap();
        // The id never changes for a credential: stored records are found by it after an upgrade.
        assert_eq!(c.tenant.as_str(), "985a303ac03c73ce");
        assert!(!c.tenant.as_str().contains("secret"));
        let other = Credentials::forward()
            .authenticate(&with_auth("Bearer sk-other"))
            .unwrap();
        assert_ne!(c.tenant, other.tenant);
        assert_eq!(c.upstream_auth.unwrap(), "Bearer sk-secret");
    }

    #[test]
    fn proxy_held_accepts_listed_keys_only() {
        let creds = Credentials::proxy_held("sk-upstream", &["client-a".into()]).unwrap();
        let ok = creds.authenticate(&with_auth("Bearer client-a")).unwrap();
        assert_eq!(ok.upstream_auth.unwrap(), "Bearer sk-upstream");
        assert!(creds.authenticate(&with_auth("Bearer client-b")).is_err());
        assert!(creds.authenticate(&HeaderMap::new()).is_err());
    }

    #[test]
    fn admin_keys_open_only_for_an_admin_key() {
        let off = AdminKeys::new(&[]);
        assert!(matches!(
            off.check(&with_auth("Bearer anything")),
            Err(ProxyError::AdminDisabled)
        ));
        let on = AdminKeys::new(&["ops-key".into()]);
        assert!(on.check(&with_auth("Bearer ops-key")).is_ok());
        assert!(matches!(
            on.check(&with_auth("Bearer client-a")),
            Err(ProxyError::AdminOnly)
        ));
        assert!(matches!(
            on.check(&with_auth("Bearer ops-ke")),
            Err(ProxyError::AdminOnly)
        ));
        assert!(matches!(
            on.check(&HeaderMap::new()),
            Err(ProxyError::Unauthorized)
        ));
    }
}
