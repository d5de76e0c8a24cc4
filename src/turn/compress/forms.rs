//! The compress stage's memory: what a conversation already decided for a text, and the records a new
//! compression leaves.
//!
//! A text seen before in this conversation takes the compressed form stored under its anchor (its original put
//! back if it was evicted meanwhile, so the marker stays expandable) or stays verbatim as decided then; a new one
//! is compressed now ([`CompressStage::fresh`]; with the earlier outputs it may repeat) and, once the turn decides
//! to send it, committed with the request's other new ones: their originals durably in one transaction first, then
//! their compressed forms. A form that points back to earlier outputs is remembered under a key that names them. Markers still carried get their originals' expiry moved forward, in
//! the background.

use super::CompressStage;
use crate::ctxzip;
use crate::store::records::{CompressedForm, OriginalMeta, RECORD_VERSION, SAVINGS_KEY};
use crate::store::{Namespace, StoreError};
use crate::turn::memo::key_of;

/// One marker an item carries: the original's hash and what it saves.
#[derive(Debug, Clone)]
pub(super) struct MarkerUse {
    pub hash: String,
    pub saved_tokens: u64,
    /// Where the conversation remembers the compressed form (refreshed with the original).
    pub form_key: String,
}

/// What a conversation decided for one text.
pub(super) enum Known {
    Compressed(String, MarkerUse),
    Verbatim,
    /// Sent verbatim so far, waiting for the conversation's first marker ([`CompressedForm::waiting`]).
    Waiting,
    New,
}

/// A compressor panicked on a text: it goes verbatim, and the pass counts the skip.
pub(super) struct CompressorPanicked;

/// A compression made this turn, before the conversation-wide decision to send it.
pub(super) struct Fresh {
    compressed: ctxzip::Compressed,
    pub form_key: String,
    query: Vec<String>,
    pub before: u64,
    pub after: u64,
}

/// Per-turn context for compressing new originals.
pub(super) struct Context<'a> {
    pub tenant: &'a str,
    pub first_user: &'a str,
    pub request_id: &'a str,
}

/// Whether a new text is compressed by its content (besides pointing back to earlier outputs), and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ByKind {
    /// Too short to compress on its own: only runs an earlier output already shows are pointed back to.
    No,
    /// By its content kind (a tool output, or a live-zone text).
    Content,
    /// As the agent's notes on its way to a call ([`ctxzip::Options::notes`]).
    Notes,
}

impl CompressStage {
    /// What this conversation already decided for `text`: its compressed form (put back in the store if the
    /// original was evicted meanwhile, so the marker stays expandable), verbatim, or nothing yet. Whether the
    /// original is there is asked without reading it: on a replica that did not make the form (or after a
    /// restart) every reused form is looked up, and an original may be megabytes.
    pub(super) async fn known(
        &self,
        ctx: &Context<'_>,
        (text, hash): (&str, &str),
        tool: &str,
        form_key: &str,
    ) -> Result<Known, StoreError> {
        let expires = Some(self.records.now() + self.settings.ttl.as_secs());
        let Some(form) = self
            .records
            .get_json::<CompressedForm>(Namespace::Compressed, ctx.tenant, form_key)
            .await?
        else {
            return Ok(Known::New);
        };
        if form.waiting {
            return Ok(Known::Waiting);
        }
        if form.verbatim {
            return Ok(Known::Verbatim);
        }
        if !self.records.has_original(ctx.tenant, hash).await? {
            let meta = OriginalMeta {
                v: RECORD_VERSION,
                tool: tool.into(),
                kind: form.kind.clone(),
                ..Default::default()
            };
            self.records
                .put_original(ctx.tenant, hash, &meta, text, expires)
                .await?;
        }
        let saved = form.tokens_before.saturating_sub(form.tokens_after);
        Ok(Known::Compressed(
            form.text,
            MarkerUse {
                hash: hash.to_owned(),
                saved_tokens: saved,
                form_key: form_key.to_owned(),
            },
        ))
    }

    /// A compression of `text` made now, not yet stored; `None` when ctxzip leaves it as it is, `Err` when a
    /// compressor panicked on it (logged here; the caller counts the skip with its pass's).
    pub(super) fn fresh(
        &self,
        ctx: &Context<'_>,
        (text, hash): (&str, &str),
        (tool, arguments): (&str, &str),
        form_key: String,
        by_kind: ByKind,
        repeats: Option<(&ctxzip::repeats::Repeats, &ctxzip::repeats::Seen<'_>)>,
    ) -> Result<Option<Fresh>, CompressorPanicked> {
        // The call's own words first: they are about this output (the test it ran, the path it read), and a long
        // task would otherwise take every one of the [`ctxzip::MAX_TERMS`] places before them.
        let query = ctxzip::output_query_terms(&ctxzip::call_query_text(arguments), ctx.first_user);
        let options = ctxzip::Options {
            query: query.clone(),
            keep_patterns: self.settings.keep_patterns.clone(),
            compress_code: self.settings.code,
            notes: by_kind == ByKind::Notes,
            viewed_source: ctxzip::views::views_source_file(tool, arguments),
            fetched: ctxzip::views::fetches_page(tool, arguments),
        };
        let own = by_kind != ByKind::No;
        let made =
            unless_panicked(|| ctxzip::compress_in_context((text, hash), &options, own, repeats));
        let Some(compressed) = made else {
            tracing::error!(
                request_id = %ctx.request_id,
                hash,
                bytes = text.len(),
                "a compressor panicked on this text (the message is above); the text goes verbatim"
            );
            return Err(CompressorPanicked);
        };
        let Some(compressed) = compressed else {
            return Ok(None);
        };
        Ok(Some(Fresh {
            form_key,
            before: ctxzip::estimate_tokens(text) as u64,
            after: ctxzip::estimate_tokens(&compressed.text) as u64,
            compressed,
            query,
        }))
    }

    /// Stores the originals of this request's new compressions in one durable transaction (no request may carry
    /// their markers before it returns), then their compressed forms in another (best effort), and accounts for
    /// them. Returns, in order, each text with its compressed bytes and marker.
    pub(super) async fn commit_all(
        &self,
        ctx: &Context<'_>,
        batch: Vec<(String, &str, &'static str, Fresh)>,
    ) -> Result<Vec<(String, String, MarkerUse)>, StoreError> {
        let expiry = self.records.now() + self.settings.ttl.as_secs();
        let metas: Vec<OriginalMeta> = batch
            .iter()
            .map(|(text, tool, _, f)| OriginalMeta {
                v: RECORD_VERSION,
                tool: (*tool).into(),
                kind: f.compressed.kind.as_str().into(),
                query: f.query.clone(),
                bytes: text.len() as u64,
                tokens_before: f.before,
                tokens_after: f.after,
            })
            .collect();
        let originals = batch
            .iter()
            .zip(&metas)
            .map(|((text, _, _, f), meta)| {
                (
                    ctx.tenant.to_owned(),
                    f.compressed.hash.clone(),
                    meta,
                    text.as_str(),
                )
            })
            .collect();
        self.records
            .put_originals_durably(originals, Some(expiry))
            .await?;
        let forms = batch
            .iter()
            .map(|(_, _, _, f)| {
                let form = CompressedForm {
                    v: RECORD_VERSION,
                    text: f.compressed.text.clone(),
                    kind: f.compressed.kind.as_str().into(),
                    tokens_before: f.before,
                    tokens_after: f.after,
                    verbatim: false,
                    waiting: false,
                };
                (ctx.tenant.to_owned(), f.form_key.clone(), form)
            })
            .collect();
        // Best effort: without the forms, the same options make the same bytes again anyway.
        if let Err(e) = self
            .records
            .put_many_json(Namespace::Compressed, forms, Some(expiry))
            .await
        {
            crate::store_fault!(e, error = %e, "could not store compressed forms");
        }
        let mut done = Vec::with_capacity(batch.len());
        let (mut compressions, mut saved) = (0i64, 0i64);
        for (text, tool, seam, fresh) in batch {
            let Fresh {
                compressed,
                form_key,
                before,
                after,
                ..
            } = fresh;
            self.expiries.insert(
                key_of(&[ctx.tenant.as_bytes(), compressed.hash.as_bytes()]),
                expiry,
            );
            compressions += 1;
            saved += i64::try_from(before.saturating_sub(after)).unwrap_or(i64::MAX);
            crate::telemetry::audit::compressed(
                &self.metrics,
                crate::telemetry::audit::Compressed {
                    request_id: ctx.request_id,
                    tenant: ctx.tenant,
                    seam,
                    tool,
                    kind: compressed.kind.as_str(),
                    before,
                    after,
                },
            );
            done.push((
                text,
                compressed.text,
                MarkerUse {
                    hash: compressed.hash,
                    saved_tokens: before.saturating_sub(after),
                    form_key,
                },
            ));
        }
        self.records.count_later(
            ctx.tenant,
            SAVINGS_KEY,
            vec![("compressions", compressions), ("saved_tokens", saved)],
        );
        Ok(done)
    }

    /// Remembers, in the background, that this conversation sends `text` verbatim: a later turn (or a restart)
    /// must not compress it then, or the prefix the provider cached would change. `waiting`: only until the
    /// conversation's first marker, which changes the request's head and so the whole cached prefix anyway.
    pub(super) fn remember_verbatim(&self, ctx: &Context<'_>, form_key: String, waiting: bool) {
        let form = CompressedForm {
            v: RECORD_VERSION,
            text: String::new(),
            kind: String::new(),
            tokens_before: 0,
            tokens_after: 0,
            verbatim: true,
            waiting,
        };
        let key = form_key;
        let expires = Some(self.records.now() + self.settings.ttl.as_secs());
        self.records.put_json_later(
            Namespace::Compressed,
            ctx.tenant,
            &key,
            &form,
            expires,
            if waiting {
                "a decision waiting for the first marker"
            } else {
                "a verbatim decision"
            },
        );
    }

    /// Moves the expiry of originals still in use forward, in the background: a marker that reaches the model stays
    /// expandable for at least the TTL after the last request that carried it. The new expiry has a little slack
    /// so that a conversation's every turn does not cost a store write.
    pub(super) fn refresh(&self, tenant: &str, markers: &[&MarkerUse]) {
        let ttl = self.settings.ttl.as_secs();
        let slack = crate::store::records::refresh_slack(ttl);
        let now = self.records.now();
        let mut due = Vec::new();
        for m in markers {
            let key = key_of(&[tenant.as_bytes(), m.hash.as_bytes()]);
            let expiry = self.expiries.get(key).unwrap_or(0);
            if expiry < now + ttl {
                self.expiries.insert(key, now + ttl + slack);
                due.push((Namespace::Originals, m.hash.clone()));
                due.push((Namespace::Compressed, m.form_key.clone()));
            }
        }
        self.records
            .touch_later(due, tenant, Some(now + ttl + slack), "an original's expiry");
    }
}

/// Runs a compressor, `None` if it panicked. The compressors are pure functions of their input, so a panic in one
/// leaves nothing half-changed behind: the text can go verbatim and the request go on, instead of the connection
/// dropping with the request (a compressor bug must never cost a user a turn).
fn unless_panicked<T>(compress: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(compress)).ok()
}

#[cfg(test)]
mod tests {
    use super::unless_panicked;

    #[test]
    #[allow(clippy::panic)]
    fn a_compressor_that_panics_gives_none_and_the_caller_goes_on() {
        assert_eq!(unless_panicked(|| Some(3)), Some(Some(3)));
        let panicked: Option<Option<u8>> = unless_panicked(|| panic!("a compressor bug"));
        assert_eq!(panicked, None);
        // The thread is still usable afterwards.
        assert_eq!(unless_panicked(|| 1 + 1), Some(2));
    }
}
