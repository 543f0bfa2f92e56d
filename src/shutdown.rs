//! Shutdown signals: the first SIGINT or SIGTERM starts a graceful shutdown; a second one
//! ends the process at once.

/// Completes on the first SIGINT or SIGTERM, and arranges for a second one to exit the
/// process immediately with status 130.
pub async fn signal() {
    wait_for_signal().await;
    tracing::info!("shutdown signal received; send another to exit at once");
    tokio::spawn(async {
        wait_for_signal().await;
        tracing::warn!("second signal: exiting now");
        std::process::exit(130);
    });
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}
