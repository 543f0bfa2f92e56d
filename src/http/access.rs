//! Who may see the status page and the JSON API: with `authMode=enforce`, a client must
//! present the access key and secret key of an account the auth accounts file allows admin
//! requests (the page shows the configuration, which GET_NAMESRV_CONFIG also keeps to admins),
//! as HTTP Basic credentials (`curl -u AK:SK`, or the browser's prompt). With `off` or `audit`
//! everything passes, as on the remoting port.
//!
//! Basic credentials travel in clear text: outside loopback, put the listener behind TLS.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

use super::App;
use crate::auth::RequestClass;
use crate::config::AuthMode;

/// The middleware of the operator routes.
pub(super) async fn require_admin(
    State(app): State<App>,
    request: Request,
    next: Next,
) -> Response {
    if app.auth.mode() != AuthMode::Enforce {
        return next.run(request).await;
    }
    let allowed = basic_credentials(request.headers().get(header::AUTHORIZATION))
        .is_some_and(|(ak, sk)| app.auth.credentials_allow(&ak, &sk, RequestClass::Admin));
    if allowed {
        return next.run(request).await;
    }
    tracing::debug!("HTTP operator route refused: no valid admin credentials");
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
