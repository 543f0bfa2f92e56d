//! Who may see the status page and the JSON API: with `authMode=enforce`, a client must
//! present the access key and secret key of an account the auth accounts file allows admin
//! requests (the page shows the configuration, which GET_NAMESRV_CONFIG also keeps to admins),
//! as HTTP Basic credentials (`curl -u AK:SK`, or the browser's prompt). With `off` or `audit`
//! everything passes, as on the remoting port.
//!
//! The credentials are checked as a signed request's would be, the account's
//! `whiteRemoteAddress` included. Refusals are counted (`namesrv_auth_http_refused_total`)
//! and logged at most once per [`REFUSAL_LOG_INTERVAL`], and a client that keeps presenting
//! wrong credentials is slowed down ([`super::throttle`]).
//!
//! Basic credentials travel in clear text: outside loopback, put the listener behind TLS.

use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use tokio::time::Instant;

use super::{App, Peer};
use crate::auth::policy::echo;
use crate::auth::{Permission, Reason};
use crate::config::AuthMode;

/// At most one refusal line per this interval (with the number left out since the last).
pub(super) const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The middleware of the operator routes.
pub(super) async fn require_admin(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    request: Request,
    next: Next,
) -> Response {
    if app.auth.mode() != AuthMode::Enforce {
        return next.run(request).await;
    }
    let ip = peer.remote.ip();
    let wait = app.failures.delay(ip, Instant::now());
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    let credentials = basic_credentials(request.headers().get(header::AUTHORIZATION));
    let presented = credentials.as_ref().map(|(u, p)| (u.as_str(), p.as_str()));
    match app.auth.check_basic(presented, Permission::Admin, ip) {
        Ok(()) => {
            app.failures.succeeded(ip);
            next.run(request).await
        }
        Err(reason) => {
            // A request without credentials is how a browser asks for the prompt: answered,
            // counted, but no guess.
            if credentials.is_some() {
                app.failures.failed(ip, Instant::now());
            }
            log_refusal(
                &app,
                peer,
                credentials.as_ref().map(|(u, _)| u.as_str()),
                reason,
            );
            unauthorized()
        }
    }
}

fn log_refusal(app: &App, peer: Peer, user: Option<&str>, reason: Reason) {
    let Some(suppressed) = app.refusal_log.lock().ready() else {
        return;
    };
    // Cut, and control characters escaped as in the remoting port's refusals.
    let user = echo(user.unwrap_or_default());
    tracing::warn!(
        peer = %peer.remote.ip(),
        user = %user,
        reason = reason.label(),
        suppressed,
        "HTTP operator route refused: no valid admin credentials"
    );
}

fn unauthorized() -> Response {
    let mut response = (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "the status page and /api need the access key and secret key of an admin account (HTTP Basic)\n",
    )
        .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"namesrv\", charset=\"UTF-8\""),
    );
    response
}

/// `(user, password)` of an `Authorization: Basic …` header.
fn basic_credentials(value: Option<&HeaderValue>) -> Option<(String, String)> {
    let encoded = value?.to_str().ok()?.strip_prefix("Basic ")?.trim();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_decoded() {
        let header = |s: &str| HeaderValue::from_str(s).unwrap();
        // "rocketmq2:12345678"
        let ok = header("Basic cm9ja2V0bXEyOjEyMzQ1Njc4");
        assert_eq!(
            basic_credentials(Some(&ok)),
            Some(("rocketmq2".into(), "12345678".into()))
        );
        for bad in ["Bearer abc", "Basic !!!", "Basic cm9ja2V0bXEy"] {
            assert_eq!(basic_credentials(Some(&header(bad))), None, "{bad}");
        }
        assert_eq!(basic_credentials(None), None);
    }
}
