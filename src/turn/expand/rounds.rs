//! The expand loop for JSON answers: answer the round's `context_expand` calls, ask again, return one response.
//!
//! The client receives the last round's response with `usage` summed over every round, no `context_expand` item,
//! and the first round's id (remembered as an alias of the last round's, for `previous_response_id`). A response
//! with no expand call is returned exactly as the upstream sent it. Client function calls made in the same round as
//! an expand call are dropped from the follow-up input: the model re-issues what it still needs.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;

use super::inject::EXPAND_STAGE;
use crate::expand::tool::EXPAND_TOOL;
use crate::expand::{echo, merge};
use crate::proxy::auth::Caller;
use crate::proxy::error::ProxyError;
use crate::proxy::upstream::UpstreamResponse;
use crate::proxy::{Outbound, UpstreamWait, forward, headers, relay};
use crate::responses::{Input, Item, RequestBody};
use crate::state::AppState;
use crate::turn::Turn;
use crate::turn::stage::{Stage, run_stages};

const ROUTE: &str = "responses";
/// Largest upstream answer read into memory to look for expand calls.
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// Everything a turn with expansion needs to make its rounds.
pub struct Rounds {
    pub state: Arc<AppState>,
    pub caller: Caller,
    /// The client's headers, without `Accept-Encoding`: the proxy must read the answers, so it asks for them plain.
    pub client_headers: HeaderMap,
    pub path_and_query: String,
    pub request_id: String,
    /// The request: first sent exactly as the stages left it; each follow-up appends to its input, so the bytes of
    /// everything before stay as they were.
    pub request: RequestBody,
    pub extra_headers: Vec<(axum::http::HeaderName, HeaderValue)>,
    /// Whether the upstream keeps the response (`store` not false), so a later turn may name it.
    stored: bool,
}

/// The turn's last phase: sends the request the stages left and runs the expand rounds, streamed or not, until
/// the model answers without `context_expand`.
pub async fn run(
    state: Arc<AppState>,
    turn: Turn,
    path_and_query: String,
    wait: &UpstreamWait,
) -> Result<Response, ProxyError> {
    let streamed = matches!(turn.body.get("stream"), Some(Value::Bool(true)));
    let rounds = Rounds::new(state, turn, path_and_query);
    if streamed {
        super::stream::run_stream(rounds, wait).await
    } else {
        run_json(rounds, wait).await
    }
}

impl Rounds {
    /// The rounds of `turn`, as the stages left it.
    pub fn new(state: Arc<AppState>, turn: Turn, path_and_query: String) -> Rounds {
        let Turn {
            request_id,
            caller,
            body: request,
            client_headers,
            response_headers: extra_headers,
            ..
        } = turn;
        let mut plain = client_headers;
        plain.remove(header::ACCEPT_ENCODING);
        let stored = !matches!(request.get("store"), Some(Value::Bool(false)));
        Rounds {
            stored,
            state,
            caller,
            client_headers: plain,
            path_and_query,
            request_id,
            request,
            extra_headers,
        }
    }

    /// Remembers the response the client saw as standing for the last real round, with markers in its history
    /// (every turn here offered the tool). Nothing is remembered of a response the upstream does not keep.
    pub fn remember(&self, client_id: &str, real_id: &str) {
        if self.stored {
            let tenant = self.caller.tenant.as_str();
            self.state
                .expander
                .aliases
                .remember(tenant, client_id, real_id);
        }
    }

    /// Sends the current request upstream.
    pub async fn send(&self, wait: &UpstreamWait) -> Result<UpstreamResponse, ProxyError> {
        let body = self.request.to_bytes();
        let len = body.len();
        forward(
            &self.state,
            ROUTE,
            wait,
            &self.caller,
            Outbound {
                method: axum::http::Method::POST,
                path_and_query: &self.path_and_query,
                client_headers: &self.client_headers,
                body: crate::proxy::upstream::SendBody::full(body),
                body_len: Some(len),
            },
        )
        .await
        .map_err(|e| e.into_proxy_error())
    }

    /// Answers the expand calls and turns the request into the next round's: input + the round's output + answers.
    /// On the last allowed round the tool is no longer offered, so the model must answer.
    pub async fn prepare_next(
        &mut self,
        round_output: &[Value],
        calls: &[merge::ExpandCall],
        next_round: usize,
    ) {
        let tenant = self.caller.tenant.as_str().to_string();
        let mut answers = Vec::with_capacity(calls.len());
        for call in calls {
            let answer = self
                .state
                .expander
                .answer(&tenant, &self.request_id, &call.arguments)
                .await;
            answers.push((call.call_id.clone(), answer.text));
        }
        let appended = merge::next_input(&[], round_output, EXPAND_TOOL, &answers);
        let mut items = match self.request.take_items() {
            Some(items) => items,
            None => match self.request.input() {
                Some(Input::Text(text)) => vec![Item::rewritten(
                    serde_json::json!({"role":"user","content": text}),
                )],
                _ => Vec::new(),
            },
        };
        items.extend(appended.into_iter().map(Item::rewritten));
        self.request.replace_items(items);
        if next_round >= self.state.expander.settings.max_rounds {
            if let Some(Value::Array(mut tools)) = self.request.get("tools") {
                tools.retain(|t| t.get("name").and_then(Value::as_str) != Some(EXPAND_TOOL));
                self.request.set("tools", Value::Array(tools));
            }
        }
        self.restage().await;
        self.state.metrics.expand_rounds.inc();
    }

    /// Runs the follow-up request through the stages before the expand stage (compress, fold), as the first round
    /// went: the round's output and the expansions it appended are compressed and folded by the same rules, and
    /// items already seen keep the bytes they had. The expand stage itself is not run again (the tool and directive
    /// are already in place). A fault fails open like on the first round; a fold that would reject the turn sends
    /// the round as it is.
    async fn restage(&mut self) {
        let placeholder = RequestBody::parse(Bytes::from_static(b"{}"));
        let Ok(placeholder) = placeholder else {
            return;
        };
        let body = std::mem::replace(&mut self.request, placeholder);
        let mut turn = Turn::new(
            self.request_id.clone(),
            self.caller.clone(),
            body,
            self.client_headers.clone(),
        );
        turn.expand_active = true;
        let stages: Vec<Arc<dyn Stage>> = self
            .state
            .stages
            .iter()
            .filter(|s| s.name() != EXPAND_STAGE)
            .cloned()
            .collect();
        if let Err(e) = run_stages(&stages, &mut turn, &self.state.metrics).await {
            tracing::warn!(request_id = %self.request_id, error = %e, "a stage refused a follow-up round; sent as it is");
        }
        self.request = turn.body;
    }
}

/// Runs a JSON turn with expansion to its end.
async fn run_json(mut rounds: Rounds, wait: &UpstreamWait) -> Result<Response, ProxyError> {
    let state = rounds.state.clone();
    let mut usages: Vec<Value> = Vec::new();
    let mut first_id: Option<String> = None;
    let mut first_created: Option<Value> = None;
    let mut round = 0usize;
    loop {
        let upstream = rounds.send(wait).await?;
        let status = upstream.response.status();
        if !status.is_success() {
            return Ok(relay(&state, upstream, rounds.extra_headers.clone()));
        }
        let headers = headers::client_response_headers(upstream.response.headers());
        let bytes = read_all(&state, upstream).await?;
        if round == 0 {
            // The common case: the tool was offered and not called. The upstream's bytes go out as they came,
            // but for the echoed tool and directive spliced out; nothing is parsed into values.
            if let Some(glance) = echo::glance(&bytes, EXPAND_TOOL).filter(|g| !g.expand_call) {
                if let Some(id) = &glance.id {
                    rounds.remember(id, id);
                }
                let body = match echo::client_view(&bytes, &glance, EXPAND_TOOL) {
                    Some(view) => Bytes::from(view),
                    None => bytes,
                };
                return Ok(respond(status, headers, body, &rounds.extra_headers));
            }
        }
        let Ok(answer) = serde_json::from_slice::<Value>(&bytes) else {
            return Ok(respond(status, headers, bytes, &rounds.extra_headers));
        };
        let real_id = answer
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let first = first_id.get_or_insert_with(|| real_id.clone()).clone();
        let created = first_created
            .get_or_insert_with(|| answer.get("created_at").cloned().unwrap_or(Value::Null))
            .clone();
        usages.push(answer.get("usage").cloned().unwrap_or(Value::Null));
        let calls = merge::expand_calls(&answer, EXPAND_TOOL);
        if calls.is_empty() || round >= state.expander.settings.max_rounds {
            rounds.remember(&first, &real_id);
            // The tool the proxy added is taken out of the echoed request too: the client never declared it.
            let mut merged = merge::final_response(answer, &usages, &first, EXPAND_TOOL);
            // One response, created when the first round was.
            if let (Some(obj), false) = (merged.as_object_mut(), created.is_null()) {
                obj.insert("created_at".into(), created);
            }
            let body = Bytes::from(serde_json::to_vec(&merged).unwrap_or_default());
            return Ok(respond(status, headers, body, &rounds.extra_headers));
        }
        round += 1;
        let output = match answer.get("output") {
            Some(Value::Array(items)) => items.clone(),
            _ => Vec::new(),
        };
        rounds.prepare_next(&output, &calls, round).await;
    }
}

async fn read_all(state: &AppState, upstream: UpstreamResponse) -> Result<Bytes, ProxyError> {
    let mut stream = state.upstream.relay(upstream.response);
    // An answer that arrives in one chunk (most do) is kept as it is, not copied.
    let mut first: Option<Bytes> = None;
    let mut buf = bytes::BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| ProxyError::UpstreamUnreachable(format!("reading the answer: {e}")))?;
        let held = first.as_ref().map_or(0, Bytes::len) + buf.len();
        if held + chunk.len() > MAX_ANSWER_BYTES {
            return Err(ProxyError::AnswerTooLarge {
                limit: MAX_ANSWER_BYTES,
            });
        }
        match first.take() {
            None if buf.is_empty() => first = Some(chunk),
            None => buf.extend_from_slice(&chunk),
            Some(earlier) => {
                buf.extend_from_slice(&earlier);
                buf.extend_from_slice(&chunk);
            }
        }
    }
    Ok(first.unwrap_or_else(|| buf.freeze()))
}

/// A response with the upstream's status and headers and a body ctxgate holds whole.
fn respond(
    status: axum::http::StatusCode,
    mut headers: HeaderMap,
    body: Bytes,
    extra: &[(axum::http::HeaderName, HeaderValue)],
) -> Response {
    headers.remove(header::CONTENT_LENGTH);
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    for (k, v) in extra {
        headers.insert(k.clone(), v.clone());
    }
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}
