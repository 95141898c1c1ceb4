//! The page's HTTP server: hyper's HTTP/1 on a TCP listener (TLS with rustls when asked), the
//! token check on every request, the embedded page, the JSON API of docs/web.md and the event
//! stream. Handlers are thin: they check their input, ask the task service or the hub, and map
//! the answer.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::auth;
use super::hub::{parse_outcome, AnswerError, Hub};
use crate::engine::tasks::{StartRequest, TaskError, Tasks};
use crate::lsp::to_proto;

type Body = BoxBody<Bytes, Infallible>;

/// The largest request body read.
const MAX_BODY: usize = 1024 * 1024;
/// How many connections are served at once (each page holds one for its events).
const MAX_CONNECTIONS: usize = 256;
/// How often an idle event stream says it is alive (proxies close silent connections).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The page's assets, embedded in the binary.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "/",
        "text/html; charset=utf-8",
        include_str!("assets/index.html"),
    ),
    (
        "/assets/app.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/app.js"),
    ),
    (
        "/assets/app.css",
        "text/css; charset=utf-8",
        include_str!("assets/app.css"),
    ),
];

/// The page's content security policy: its own scripts and styles only, nothing framed.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// What tasks started from the page run with when the page does not say (`rawko web
/// --provider …`, like `rawko acp`'s).
#[derive(Debug, Clone, Default)]
pub struct StartDefaults {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub script: Option<std::path::PathBuf>,
    pub base_url: Option<String>,
}

/// What every request is served with.
pub struct Server {
    pub hub: Arc<Hub>,
    pub token: String,
    pub secure: bool,
    pub defaults: StartDefaults,
}

/// Accepts connections until the listener fails or the future is dropped.
pub async fn serve(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    server: Arc<Server>,
) {
    let room = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (sock, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // Out of files, say: wait a little rather than spin.
                tracing::warn!("web: cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = room.clone().acquire_owned().await else {
            return;
        };
        let _ = sock.set_nodelay(true);
        let server = server.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let server = server.clone();
                async move { Ok::<_, Infallible>(handle(&server, req).await) }
            });
            let http1 = hyper::server::conn::http1::Builder::new();
            let result = match tls {
                Some(tls) => {
                    match tokio::time::timeout(Duration::from_secs(10), tls.accept(sock)).await {
                        Ok(Ok(stream)) => {
                            http1
                                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                                .await
                        }
                        Ok(Err(e)) => {
                            tracing::debug!("web: TLS handshake failed: {e}");
                            Ok(())
                        }
                        Err(_) => Ok(()),
                    }
                }
                None => {
                    http1
                        .serve_connection(hyper_util::rt::TokioIo::new(sock), service)
                        .await
                }
            };
            if let Err(e) = result {
                tracing::debug!("web: connection ended: {e}");
            }
            drop(permit);
        });
    }
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The first visit's address holds the token: it must never go anywhere as a referrer.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    response
}

fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(bytes) => full(status, "application/json", bytes),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot write the answer: {e}"),
        ),
    }
}

fn error(status: StatusCode, message: &str) -> Response<Body> {
    json_response(status, &json!({ "error": message }))
}

fn unauthorized() -> Response<Body> {
    full(
        StatusCode::UNAUTHORIZED,
        "text/html; charset=utf-8",
        "<!doctype html><meta charset=utf-8><title>rawko: not signed in</title>\
<p>This page needs the address rawko printed when it started \
(<code>rawko web: http://…/?token=…</code>). Open that address once; this browser then keeps \
a cookie until it closes. A new start of rawko prints a new address.</p>",
    )
}

fn task_error(e: &TaskError) -> Response<Body> {
    let status = match e {
        TaskError::Invalid(_) => StatusCode::BAD_REQUEST,
        TaskError::UnknownAgent(_) | TaskError::UnknownWorkflow(_) | TaskError::UnknownTask(_) => {
            StatusCode::NOT_FOUND
        }
        TaskError::Conflict(_) => StatusCode::CONFLICT,
        TaskError::CannotStart(_) => StatusCode::UNPROCESSABLE_ENTITY,
        TaskError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(status, &e.to_string())
}

/// A path segment with its `%XX` escapes decoded, if it decodes to UTF-8.
fn decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn header_str(req: &Request<Incoming>, name: header::HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

async fn handle(server: &Server, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    // The first visit: the token in the address becomes a cookie, and the address loses it.
    if req.method() == Method::GET && path == "/" {
        if let Some(given) = req.uri().query().and_then(auth::query_token) {
            if !auth::same(given, &server.token) {
                return unauthorized();
            }
            let mut response = full(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", "");
            let headers = response.headers_mut();
            headers.insert(header::LOCATION, HeaderValue::from_static("/"));
            if let Ok(v) = HeaderValue::from_str(&auth::set_cookie(&server.token, server.secure)) {
                headers.insert(header::SET_COOKIE, v);
            }
            return response;
        }
    }
    let signed_in = req
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(auth::cookie_token)
        .any(|t| auth::same(t, &server.token));
    if !signed_in {
        return unauthorized();
    }
    if req.method() == Method::POST {
        let same_origin = auth::same_origin(
            header_str(&req, header::ORIGIN),
            header_str(&req, header::HOST),
            server.secure,
        );
        if !same_origin {
            return error(
                StatusCode::FORBIDDEN,
                "this request does not come from rawko's page (its Origin is not this server)",
            );
        }
        return post(server, &path, req).await;
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return error(
            StatusCode::METHOD_NOT_ALLOWED,
            "only GET and POST are served",
        );
    }
    get(server, &path).await
}

async fn get(server: &Server, path: &str) -> Response<Body> {
    if let Some((_, content_type, body)) = ASSETS.iter().find(|(p, _, _)| *p == path) {
        return full(StatusCode::OK, content_type, *body);
    }
    let Some(tasks) = server.hub.tasks() else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "rawko is starting");
    };
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["api", "events"] => events(&server.hub, &tasks),
        ["api", "info"] => {
            let outcome = tasks.load_workflows().await;
            let set = &outcome.workflows;
            let workflows: Vec<_> = set
                .iter()
                .map(|d| to_proto::workflow_summary(set, d))
                .collect();
            json_response(
                StatusCode::OK,
                &json!({
                    "workspace": tasks.workspace(),
                    "version": env!("CARGO_PKG_VERSION"),
                    "workflows": workflows,
                }),
            )
        }
        ["api", "tasks"] => {
            let list: Vec<_> = tasks
                .list_read()
                .await
                .iter()
                .map(to_proto::task_summary)
                .collect();
            json_response(StatusCode::OK, &json!({ "tasks": list }))
        }
        ["api", "approvals"] => json_response(
            StatusCode::OK,
            &json!({ "approvals": server.hub.approvals(None) }),
        ),
        ["api", "tasks", id] => {
            let Some(id) = decode(id) else {
                return error(StatusCode::BAD_REQUEST, "the task id is not valid UTF-8");
            };
            match tasks.get(&id).await {
                Ok(snapshot) => {
                    let phases = tasks.outline(&snapshot).await;
                    json_response(
                        StatusCode::OK,
                        &json!({
                            "task": to_proto::task_detail(&snapshot, &phases),
                            "output": server.hub.output(&id),
                            "approvals": server.hub.approvals(Some(&id)),
                        }),
                    )
                }
                Err(e) => task_error(&e),
            }
        }
        _ => error(StatusCode::NOT_FOUND, "no such page"),
    }
}

/// The event stream: a `hello` first (the page then reads the lists), every event of the hub as
/// it comes, a comment every 15 s while nothing happens, and `hello` again when the page fell so
/// far behind that messages were dropped (it reads the lists again).
fn events(hub: &Hub, tasks: &Tasks) -> Response<Body> {
    let hello: Arc<str> = super::hub::sse(
        "hello",
        &json!({ "workspace": tasks.workspace() }).to_string(),
    )
    .into();
    let receiver = hub.subscribe();
    let stream = futures::stream::unfold(
        (receiver, Some(hello.clone()), hello),
        |(mut receiver, first, hello)| async move {
            if let Some(first) = first {
                let frame = Frame::data(Bytes::from(first.as_bytes().to_vec()));
                return Some((Ok::<_, Infallible>(frame), (receiver, None, hello)));
            }
            let message: Arc<str> = tokio::select! {
                m = receiver.recv() => match m {
                    Ok(m) => m,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => hello.clone(),
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                },
                () = tokio::time::sleep(KEEP_ALIVE) => ": keep-alive\n\n".into(),
            };
            let frame = Frame::data(Bytes::from(message.as_bytes().to_vec()));
            Some((Ok(frame), (receiver, None, hello)))
        },
    );
    let mut response = Response::new(StreamBody::new(stream).boxed());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[derive(Deserialize)]
struct StartBody {
    #[serde(default)]
    description: String,
    #[serde(default)]
    workflow: Option<String>,
}

#[derive(Deserialize)]
struct AnswerBody {
    outcome: String,
}

async fn read_json<T: serde::de::DeserializeOwned>(
    req: Request<Incoming>,
) -> Result<T, Response<Body>> {
    let bytes = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            return Err(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request is too large or broken (at most 1 MiB of JSON)",
            ))
        }
    };
    let bytes: &[u8] = if bytes.is_empty() { b"{}" } else { &bytes };
    serde_json::from_slice(bytes).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            &format!("the request is not understood: {e}"),
        )
    })
}

async fn post(server: &Server, path: &str, req: Request<Incoming>) -> Response<Body> {
    let Some(tasks) = server.hub.tasks() else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "rawko is starting");
    };
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let decoded: Option<Vec<String>> = segments.iter().map(|s| decode(s)).collect();
    let Some(segments) = decoded else {
        return error(StatusCode::BAD_REQUEST, "the address is not valid UTF-8");
    };
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    match segments.as_slice() {
        ["api", "tasks"] => {
            let body: StartBody = match read_json(req).await {
                Ok(b) => b,
                Err(r) => return r,
            };
            if body.description.trim().is_empty() {
                return error(
                    StatusCode::BAD_REQUEST,
                    "say what the task is (the description is empty)",
                );
            }
            let d = &server.defaults;
            let request = StartRequest {
                description: body.description,
                workflow: body.workflow.filter(|w| !w.trim().is_empty()),
                agent: None,
                provider: d.provider.clone(),
                model: d.model.clone(),
                script: d.script.clone(),
                base_url: d.base_url.clone(),
                agent_command: None,
            };
            match tasks.start(request).await {
                Ok(started) => json_response(
                    StatusCode::OK,
                    &json!({ "taskId": started.id, "note": started.note }),
                ),
                Err(e) => task_error(&e),
            }
        }
        ["api", "tasks", id, "cancel"] => done(tasks.cancel(id)),
        ["api", "tasks", id, "interrupt"] => done(tasks.interrupt(id)),
        ["api", "tasks", id, "resume"] => match tasks.resume(id).await {
            Ok(_) => json_response(StatusCode::OK, &json!({})),
            Err(e) => task_error(&e),
        },
        ["api", "tasks", id, "approvals", call] => {
            let body: AnswerBody = match read_json(req).await {
                Ok(b) => b,
                Err(r) => return r,
            };
            let Some(answer) = parse_outcome(&body.outcome) else {
                return error(
                    StatusCode::BAD_REQUEST,
                    "the answer must be reject_once, allow_once, allow_always or reject_always",
                );
            };
            match server.hub.answer(id, call, answer) {
                Ok(()) => json_response(StatusCode::OK, &json!({})),
                Err(AnswerError::NotPending) => error(
                    StatusCode::CONFLICT,
                    "this call was already answered (here or in the editor), or the task stopped waiting for it",
                ),
            }
        }
        _ => error(StatusCode::NOT_FOUND, "no such action"),
    }
}

fn done(result: Result<(), TaskError>) -> Response<Body> {
    match result {
        Ok(()) => json_response(StatusCode::OK, &Value::Object(Default::default())),
        Err(e) => task_error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_in_a_segment_are_decoded_and_broken_ones_refused() {
        assert_eq!(decode("a%2Fb").as_deref(), Some("a/b"));
        assert_eq!(decode("toolu_01").as_deref(), Some("toolu_01"));
        assert_eq!(decode("%zz"), None);
        assert_eq!(decode("%"), None);
        assert_eq!(decode("%ff"), None);
    }
}
