//! An OTLP/HTTP trace receiver for tests: a hyper HTTP/1.1 server on 127.0.0.1 (in its own
//! thread and runtime, so process tests can use it) that records every request and decodes
//! `ExportTraceServiceRequest` bodies with the official `opentelemetry-proto` types, protobuf
//! or JSON by content type. It can also accept requests and never answer them, like a stalled
//! collector.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::{AnyValue as Any, KeyValue};
use prost::Message;

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `200` with an empty export response.
    Answer,
    /// Reads the request, records it, and never answers (the connection stays open).
    Never,
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body decoded by its content type (protobuf or JSON).
    pub fn decode(&self) -> ExportTraceServiceRequest {
        match self.header("content-type") {
            Some("application/json") => serde_json::from_slice(&self.body).unwrap(),
            Some("application/x-protobuf") => {
                ExportTraceServiceRequest::decode(self.body.as_slice()).unwrap()
            }
            other => panic!("unexpected content type {other:?}"),
        }
    }
}

/// A finished span as the collector saw it, flattened for assertions.
#[derive(Debug, Clone)]
pub struct SeenSpan {
    pub name: String,
    pub trace_id: Vec<u8>,
    pub span_id: Vec<u8>,
    pub parent_span_id: Vec<u8>,
    /// Attribute values rendered as strings; arrays as `[a,b]`.
    pub attributes: BTreeMap<String, String>,
    /// `status.code`: 0 unset, 1 ok, 2 error.
    pub status: i32,
    /// The resource's `service.name`.
    pub service_name: String,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl SeenSpan {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

pub struct Receiver {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    /// Starts a receiver on an ephemeral loopback port.
    pub fn start(mode: Mode) -> Receiver {
        let received = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let log = received.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    let log = log.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |request| handle(request, mode, log.clone()));
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
        });
        let addr = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        Receiver { addr, received }
    }

    /// The base endpoint (what `otlp_endpoint` / `OTEL_EXPORTER_OTLP_ENDPOINT` take).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Every span of every request, in arrival order.
    pub fn spans(&self) -> Vec<SeenSpan> {
        let mut out = Vec::new();
        for request in self.requests() {
            for resource_spans in request.decode().resource_spans {
                let service_name = resource_spans
                    .resource
                    .iter()
                    .flat_map(|r| &r.attributes)
                    .find(|kv| kv.key == "service.name")
                    .map(|kv| render(kv.value.as_ref()))
                    .unwrap_or_default();
                for scope in resource_spans.scope_spans {
                    for span in scope.spans {
                        out.push(SeenSpan {
                            name: span.name,
                            trace_id: span.trace_id,
                            span_id: span.span_id,
                            parent_span_id: span.parent_span_id,
                            attributes: attributes(&span.attributes),
                            status: span.status.map_or(0, |s| s.code),
                            service_name: service_name.clone(),
                            start_ns: span.start_time_unix_nano,
                            end_ns: span.end_time_unix_nano,
                        });
                    }
                }
            }
        }
        out
    }

    /// Every body byte received, for asserting what must never be sent.
    pub fn all_bytes(&self) -> Vec<u8> {
        self.requests().into_iter().flat_map(|r| r.body).collect()
    }
}

async fn handle(
    request: Request<Incoming>,
    mode: Mode,
    log: Arc<Mutex<Vec<Received>>>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let path = request.uri().path().to_string();
    let headers = request
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let json = request
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes() == b"application/json");
    let body = request.into_body().collect().await?.to_bytes().to_vec();
    log.lock().unwrap().push(Received {
        path,
        headers,
        body,
    });
    if mode == Mode::Never {
        std::future::pending::<()>().await;
    }
    let (content_type, body) = if json {
        ("application/json", Bytes::from_static(b"{}"))
    } else {
        ("application/x-protobuf", Bytes::new())
    };
    Ok(Response::builder()
        .status(200)
        .header("content-type", content_type)
        .body(Full::new(body))
        .unwrap())
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| (kv.key.clone(), render(kv.value.as_ref())))
        .collect()
}

fn render(value: Option<&Any>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        Some(AnyValue::ArrayValue(a)) => format!(
            "[{}]",
            a.values
                .iter()
                .map(|v| render(Some(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}
