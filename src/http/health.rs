//! `/healthz` (liveness: the process answers) and `/readyz` (readiness: see
//! [`crate::state::readiness`], and on a controller node,
//! knowing a leader of its group).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use tokio::time::Instant;

use super::{App, readiness, text};

/// Liveness: answering at all is the whole test.
pub(super) async fn healthz() -> Response {
    text(StatusCode::OK, "ok\n")
}

/// Readiness: 200 when clients may be sent here, else 503 with the reasons.
pub(super) async fn readyz(State(app): State<App>) -> Response {
    let reasons = readiness(&app.state, app.side.controller.as_ref(), Instant::now());
    if reasons.is_empty() {
        return text(StatusCode::OK, "ready\n");
    }
    let reasons: Vec<String> = reasons.iter().map(ToString::to_string).collect();
    text(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("not ready: {}\n", reasons.join("; ")),
    )
}
