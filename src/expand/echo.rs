//! The client view of an upstream answer that needed no expansion, without re-serializing it.
//!
//! A turn that offers `context_expand` sends the upstream the proxy's tool and directive, and the upstream echoes
//! them back in the response object (`tools`, `instructions`, and `tool_choice` when it is a list of allowed tools
//! the proxy added the tool to). When the model did not call the tool, that echo is
//! the only thing the client must not see: everything else reaches it byte for byte. So instead of parsing the
//! whole answer into values and writing it out again, this module finds the byte spans of the few members it
//! needs in one borrowing pass ([`glance`]) and splices new bytes into exactly those spans ([`client_view`]).
//! The same splice serves the `response` object of SSE lifecycle events ([`strip_event`], and `ResponseEcho`,
//! which the stream's light path reads in the same pass as the event's head).

use std::borrow::Cow;
use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::merge::restore_instructions;
use super::skim;

/// What classifies an item or a tool: its type and name (all else skipped).
#[derive(Deserialize, Debug, Default, PartialEq, Eq)]
pub(crate) struct Head<'a> {
    #[serde(rename = "type", default, borrow)]
    pub(crate) kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) name: Option<Cow<'a, str>>,
}

impl<'a> Head<'a> {
    pub(crate) fn is_function(&self, name: &str) -> bool {
        self.kind.as_deref() == Some("function_call") && self.name.as_deref() == Some(name)
    }

    /// The head of the object at `at` of `b`, read with [`skim`], and where the object ends; `None` for anything
    /// but an object whose `type` and `name` (each at most once) are strings or null.
    pub(crate) fn read(b: &'a [u8], at: usize) -> Option<(Head<'a>, usize)> {
        let (mut kind, mut name) = (None, None);
        let mut members = skim::members(b, at);
        while let Some(member) = members.next() {
            match member?.key()?.as_ref() {
                b"type" => skim::once(&mut kind, &mut members, skim::string)?,
                b"name" => skim::once(&mut name, &mut members, skim::string)?,
                _ => {}
            }
        }
        let head = Head {
            kind: kind.flatten(),
            name: name.flatten(),
        };
        Some((head, members.end()?))
    }
}

/// What is read of a response object, a JSON answer's or an SSE lifecycle event's `response`: the response's
/// identity, where its `output` stands (a JSON answer looks there for an expand call) and where its echoed members
/// stand (ranges of the bytes it was read from).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ResponseEcho<'a> {
    pub(crate) id: Option<Cow<'a, str>>,
    pub(crate) created_at: Option<Range<usize>>,
    output: Option<Range<usize>>,
    echo: Echo,
}

impl<'a> ResponseEcho<'a> {
    /// The response object at `at` of `b`, read with [`skim`], and where it ends. `None` for anything but an
    /// object read to its end, or one that repeats a member read here (serde refused those too): the caller then
    /// takes the full path.
    ///
    /// The echoed members are usually the bytes this thread spliced last ([`EchoCache`]): a value that starts
    /// with them ends where they end, so it is not scanned again.
    pub(crate) fn read(b: &'a [u8], at: usize) -> Option<(ResponseEcho<'a>, usize)> {
        with_thread_cache(|cache| ResponseEcho::read_knowing(b, at, cache))
    }

    fn read_knowing(
        b: &'a [u8],
        at: usize,
        known: &EchoCache,
    ) -> Option<(ResponseEcho<'a>, usize)> {
        let (mut id, mut created_at, mut output, mut tools, mut instructions, mut tool_choice) =
            (None, None, None, None, None, None);
        let known_tools = known.tools.as_ref().map(|(seen, _)| seen.as_slice());
        let known_instructions = known.instructions.as_ref().map(|(seen, _)| seen.as_slice());
        let mut members = skim::members(b, at);
        while let Some(member) = members.next() {
            let member = member?;
            match member.key()?.as_ref() {
                b"id" => skim::once(&mut id, &mut members, skim::string)?,
                b"created_at" => skim::once(&mut created_at, &mut members, span)?,
                b"output" => skim::once(&mut output, &mut members, span)?,
                b"tools" => skim::once_span_known(&mut tools, &mut members, known_tools)?,
                b"instructions" => {
                    skim::once_span_known(&mut instructions, &mut members, known_instructions)?
                }
                b"tool_choice" => skim::once(&mut tool_choice, &mut members, span)?,
                _ => {}
            }
        }
        let echo = ResponseEcho {
            id: id.flatten(),
            created_at: created_at.flatten(),
            output: output.flatten(),
            echo: Echo {
                tools: tools.flatten(),
                instructions: instructions.flatten(),
                tool_choice: tool_choice.flatten(),
            },
        };
        Some((echo, members.end()?))
    }

    /// Where the echoed `tools` and `instructions` stand.
    #[cfg(test)]
    pub(crate) fn echo_ranges(&self) -> (Option<Range<usize>>, Option<Range<usize>>) {
        (self.echo.tools.clone(), self.echo.instructions.clone())
    }
}

/// Where the echoed tool and directive stand in the event `data` the `response` object `echo` was read from (ranges
/// of `data`, in order, none overlapping), and the bytes that replace each; `None` when nothing has to change. The
/// replacements are remembered per thread, as for [`client_view`]: every stream of a conversation echoes the same
/// members. The caller frames the event from `data`'s bytes around them ([`crate::expand::sse::encode_parts`]), so
/// every other byte stays as it came, UTF-8 or not (the event's reader did not check it), as in an event relayed
/// untouched.
pub(crate) fn echo_splices(
    data: &[u8],
    echo: &ResponseEcho<'_>,
    expand_tool: &str,
) -> Option<Vec<(Range<usize>, Vec<u8>)>> {
    with_thread_cache(|cache| splices_cached(data, &echo.echo, expand_tool, cache))
}

/// An SSE event's `response` member, if any.
#[derive(Deserialize)]
struct EventResponse<'a> {
    #[serde(borrow, default)]
    response: Option<&'a RawValue>,
}

/// Where the members of one JSON response object are, and whether its output calls the expand tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glance {
    /// The response's `id`.
    pub id: Option<String>,
    /// Whether `output` holds a `function_call` of the expand tool (or could not be read, to be safe).
    pub expand_call: bool,
    echo: Echo,
}

/// Where the echoed `tools` and `instructions` stand in the bytes being spliced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Echo {
    tools: Option<Range<usize>>,
    instructions: Option<Range<usize>>,
    /// An `allowed_tools` choice lists the expand tool too ([`crate::turn::expand::inject`]).
    tool_choice: Option<Range<usize>>,
}

/// A member's value read as where it stands.
fn span(_: &[u8], value: Range<usize>) -> Option<Range<usize>> {
    Some(value)
}

fn raw_span(base: &[u8], raw: &RawValue) -> Range<usize> {
    let start = raw.get().as_ptr() as usize - base.as_ptr() as usize;
    start..start + raw.get().len()
}

/// Reads a response object (`ResponseEcho::read`) and its `output` item heads with [`skim`], copying nothing
/// it skips. `None` when the bytes are not one JSON object (or repeat a member this module reads, or hold an
/// `output` skim cannot follow): the caller then takes the full path.
pub fn glance(bytes: &[u8], expand_tool: &str) -> Option<Glance> {
    let (response, end) = ResponseEcho::read(bytes, 0)?;
    if !skim::only_ws_after(bytes, end) {
        return None;
    }
    let expand_call = match response.output {
        None => false,
        // Only an array holds items; an item that is not an object is not a call.
        Some(range) if bytes.get(range.start) == Some(&b'[') => {
            skim::elements(bytes, range.start)?.iter().any(|item| {
                Head::read(bytes, item.start).is_some_and(|(h, _)| h.is_function(expand_tool))
            })
        }
        Some(_) => false,
    };
    Some(Glance {
        id: response.id.map(Cow::into_owned),
        expand_call,
        echo: response.echo,
    })
}

/// The answer as the client must see it: the expand tool taken out of `tools` and the directive out of
/// `instructions`; every other byte as the upstream sent it. `None` when nothing had to change.
///
/// The splice is remembered per thread (see [`EchoCache`]): the turns of a conversation echo the same members.
pub fn client_view(bytes: &[u8], glance: &Glance, expand_tool: &str) -> Option<Vec<u8>> {
    with_thread_cache(|cache| client_view_cached(bytes, &glance.echo, expand_tool, cache))
}

/// Runs `f` with this thread's [`EchoCache`] (a fresh one should the cache be in use already).
fn with_thread_cache<R>(f: impl FnOnce(&mut EchoCache) -> R) -> R {
    thread_local! {
        static CACHE: std::cell::RefCell<EchoCache> = std::cell::RefCell::new(EchoCache::default());
    }
    CACHE.with(|cache| match cache.try_borrow_mut() {
        Ok(mut cache) => f(&mut cache),
        Err(_) => f(&mut EchoCache::default()),
    })
}

/// The last splice of each echoed member, kept per thread: the lifecycle events of a stream (created, in progress,
/// completed) and the turns of a conversation echo the same `tools` and `instructions`, so the splice is computed
/// once and the later ones only compared (byte for byte, so a different echo is never given a stale splice).
#[derive(Debug, Default)]
pub struct EchoCache {
    tools: Option<(Vec<u8>, Option<Vec<u8>>)>,
    instructions: Option<(Vec<u8>, Option<Vec<u8>>)>,
}

fn cached(
    slot: &mut Option<(Vec<u8>, Option<Vec<u8>>)>,
    raw: &[u8],
    compute: impl FnOnce(&[u8]) -> Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    match slot {
        Some((seen, out)) if seen.as_slice() == raw => out.clone(),
        _ => {
            let out = compute(raw);
            *slot = Some((raw.to_vec(), out.clone()));
            out
        }
    }
}

/// [`client_view`] with an [`EchoCache`], for the echoed members at `echo`.
pub fn client_view_cached(
    bytes: &[u8],
    echo: &Echo,
    expand_tool: &str,
    cache: &mut EchoCache,
) -> Option<Vec<u8>> {
    let splices = splices_cached(bytes, echo, expand_tool, cache)?;
    apply(bytes, &splices)
}

/// The splices [`client_view_cached`] makes, in order; `None` when nothing has to change (or a range is not one of
/// `bytes`).
fn splices_cached(
    bytes: &[u8],
    echo: &Echo,
    expand_tool: &str,
    cache: &mut EchoCache,
) -> Option<Vec<(Range<usize>, Vec<u8>)>> {
    let mut splices: Vec<(Range<usize>, Vec<u8>)> = Vec::new();
    if let Some(range) = &echo.tools {
        let raw = bytes.get(range.clone())?;
        if let Some(tools) = cached(&mut cache.tools, raw, |t| strip_tool(t, expand_tool)) {
            splices.push((range.clone(), tools));
        }
    }
    if let Some(range) = &echo.instructions {
        let raw = bytes.get(range.clone())?;
        let restored = cached(&mut cache.instructions, raw, |raw| {
            let text = serde_json::from_slice::<Cow<'_, str>>(raw).ok()?;
            let value = restore_instructions(&text)?;
            serde_json::to_vec(&value).ok()
        });
        if let Some(restored) = restored {
            splices.push((range.clone(), restored));
        }
    }
    if let Some(range) = &echo.tool_choice {
        let raw = bytes.get(range.clone())?;
        // Most choices are a string ("auto"): only an object naming the tool is read.
        if raw.first() == Some(&b'{')
            && memchr::memmem::find(raw, expand_tool.as_bytes()).is_some()
            && let Some(choice) = strip_allowed(raw, expand_tool)
        {
            splices.push((range.clone(), choice));
        }
    }
    if splices.is_empty() {
        return None;
    }
    splices.sort_by_key(|(r, _)| r.start);
    // Two members never overlap; checked rather than assumed, since a splice of overlapping ranges would repeat bytes.
    if splices.windows(2).any(|w| w[0].0.end > w[1].0.start) {
        return None;
    }
    Some(splices)
}

/// `bytes` with each range of `splices` (in order, none overlapping) replaced by its bytes.
pub(crate) fn apply(bytes: &[u8], splices: &[(Range<usize>, Vec<u8>)]) -> Option<Vec<u8>> {
    Some(pieces(bytes, 0, splices)?.concat())
}

/// The pieces [`apply`] joins, for a caller that writes them out itself (an SSE frame). `bytes` stands at
/// `offset` of what the ranges count in (a response object inside its event); `None` when a range falls outside
/// `bytes` or before the one it follows.
pub(crate) fn pieces<'a>(
    bytes: &'a [u8],
    offset: usize,
    splices: &'a [(Range<usize>, Vec<u8>)],
) -> Option<Vec<&'a [u8]>> {
    let mut parts = Vec::with_capacity(2 * splices.len() + 1);
    let mut at = 0;
    for (range, with) in splices {
        parts.push(bytes.get(at..range.start.checked_sub(offset)?)?);
        parts.push(with.as_slice());
        at = range.end.checked_sub(offset)?;
    }
    parts.push(bytes.get(at..)?);
    Some(parts)
}

/// The `tools` array without the expand tool, the other elements' bytes (and the separators around them) kept;
/// `None` when the tool is not there.
fn strip_tool(array: &[u8], expand_tool: &str) -> Option<Vec<u8>> {
    let elements: Vec<&RawValue> = serde_json::from_slice(array).ok()?;
    let spans: Vec<Range<usize>> = elements.iter().map(|e| raw_span(array, e)).collect();
    let dropped: Vec<usize> = elements
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            serde_json::from_str::<Head<'_>>(e.get()).is_ok_and(|h| {
                h.kind.as_deref() == Some("function") && h.name.as_deref() == Some(expand_tool)
            })
        })
        .map(|(i, _)| i)
        .collect();
    match dropped.as_slice() {
        [] => None,
        [k] => {
            let k = *k;
            // Take the element with the separator before it (or, for the first, the one after it).
            let cut = match (k.checked_sub(1), spans.get(k + 1)) {
                (Some(prev), _) => spans.get(prev)?.end..spans.get(k)?.end,
                (None, Some(next)) => spans.get(k)?.start..next.start,
                (None, None) => spans.get(k)?.clone(),
            };
            let mut out = Vec::with_capacity(array.len());
            out.extend_from_slice(array.get(..cut.start)?);
            out.extend_from_slice(array.get(cut.end..)?);
            Some(out)
        }
        _ => {
            // Several copies (never sent by ctxgate itself): rebuild the array from the kept elements.
            let kept = (0..elements.len()).filter(|i| !dropped.contains(i));
            let parts: Vec<&str> = kept
                .filter_map(|i| elements.get(i).map(|e| e.get()))
                .collect();
            Some(format!("[{}]", parts.join(",")).into_bytes())
        }
    }
}

/// An `allowed_tools` choice without the expand tool in its list, its other bytes kept; `None` for any other
/// choice, or one whose list does not name the tool.
fn strip_allowed(choice: &[u8], expand_tool: &str) -> Option<Vec<u8>> {
    let (mut kind, mut tools) = (None, None);
    let mut members = skim::members(choice, 0);
    while let Some(member) = members.next() {
        let member = member?;
        match member.key()?.as_ref() {
            b"type" => skim::once(&mut kind, &mut members, skim::string)?,
            b"tools" => skim::once(&mut tools, &mut members, span)?,
            _ => {}
        }
    }
    if kind.flatten().as_deref() != Some("allowed_tools") {
        return None;
    }
    let range = tools.flatten()?;
    let stripped = strip_tool(choice.get(range.clone())?, expand_tool)?;
    let mut out = Vec::with_capacity(choice.len());
    out.extend_from_slice(choice.get(..range.start)?);
    out.extend_from_slice(&stripped);
    out.extend_from_slice(choice.get(range.end..)?);
    Some(out)
}

/// The data of an SSE event whose `response` object echoes the expand tool or directive, with both taken out;
/// `None` when the event has no such echo (or is not a JSON object).
pub fn strip_event(data: &str, expand_tool: &str) -> Option<String> {
    let event: EventResponse<'_> = serde_json::from_str(data).ok()?;
    let range = raw_span(data.as_bytes(), event.response?);
    strip_response(data, range, expand_tool, &mut EchoCache::default())
}

/// [`strip_event`] for an event whose `response` object stands at `range` of `data`, with an [`EchoCache`].
fn strip_response(
    data: &str,
    range: Range<usize>,
    expand_tool: &str,
    cache: &mut EchoCache,
) -> Option<String> {
    let response = data.get(range.clone())?.as_bytes();
    let inner = glance(response, expand_tool)?;
    let restored = client_view_cached(response, &inner.echo, expand_tool, cache)?;
    let restored = String::from_utf8(restored).ok()?;
    let mut out = String::with_capacity(data.len());
    out.push_str(data.get(..range.start)?);
    out.push_str(&restored);
    out.push_str(data.get(range.end..)?);
    Some(out)
}

#[cfg(test)]
#[path = "echo_tests.rs"]
mod tests;
