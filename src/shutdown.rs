//! Shutdown signals: the first SIGINT or SIGTERM starts a graceful shutdown; a second one
//! ends the process at once. SIGUSR2 asks the server to hand over to a new process that
//! takes over its port (`namesrv --takeover`, see [`crate::server::handover`]).

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

/// Completes on SIGUSR2: a new server process is taking over (never, where there is none).
pub async fn handover() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut usr2) = signal(SignalKind::user_defined2())
            && usr2.recv().await.is_some()
        {
            tracing::info!("SIGUSR2: a new server takes over; handing over now");
            return;
        }
    }
    std::future::pending().await
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
