//! The operator's view across tenants: `GET /admin/stats`, behind an admin key.
//!
//! Every other route answers for one tenant — the one the caller's credential names. This one lists the savings
//! counters of every tenant the store has seen (its counter sets, which every replica adds to, so the figures are
//! the fleet's on a shared store), and their sum. It sits outside `/v1/`, so the client-credential check of the
//! edge does not apply; instead the handler lets through only a key from `[auth] admin_keys`
//! ([`AdminKeys`](crate::proxy::auth::AdminKeys)): with
//! none configured the route is off (404), a client's key gets 403. Nothing here is proxied or counted as traffic.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::proxy::error::ProxyError;
use crate::state::AppState;
use crate::store::records::{SavingsTotals, tenant_savings};

/// Routes that need an admin key (checked by the handler, not by the edge's client authentication).
pub const ADMIN_ROUTES: [&str; 1] = ["/admin/stats"];

/// `GET /admin/stats`: `{"tenants": [{"tenant", "totals"}…], "totals"}`, tenants sorted by id.
pub async fn stats(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Response, ProxyError> {
    state.admin.check(&headers)?;
    let tenants = tenant_savings(state.store.as_ref())
        .await
        .map_err(|e| ProxyError::StoreUnavailable(e.to_string()))?;
    let mut totals = SavingsTotals::default();
    let rows: Vec<serde_json::Value> = tenants
        .iter()
        .map(|(tenant, t)| {
            totals.add(t);
            json!({"tenant": tenant, "totals": t})
        })
        .collect();
    Ok(Json(json!({"tenants": rows, "totals": totals})).into_response())
}
