//! Shutdown signals: the first SIGINT or SIGTERM starts a graceful shutdown; a second one
//! ends the process at once. SIGUSR2 asks the server to hand over to a new process that
//! takes over its port (`namesrv --takeover`, see [`crate::server::handover`]).

use std::convert::Infallible;

/// The shutdown signals, listened to from the moment [`listen`] returns: a signal that arrives
/// before the server first waits for it (say, just after the boot line) is not lost, and does
/// not kill the process with the default action.
pub struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    usr2: Option<tokio::signal::unix::Signal>,
}

/// Installs the handlers for SIGINT, SIGTERM and SIGUSR2 now. Call it inside the runtime,
/// before announcing that the server is up.
pub fn listen() -> Signals {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        Signals {
            term: signal(SignalKind::terminate()).expect("SIGTERM handler"),
            int: signal(SignalKind::interrupt()).expect("SIGINT handler"),
            usr2: signal(SignalKind::user_defined2()).ok(),
        }
    }
    #[cfg(not(unix))]
    Signals {}
}

/// Why the server stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// SIGINT or SIGTERM.
    Stop,
    /// SIGUSR2: a new server process takes over the port.
    HandOver,
}

impl Signals {
    /// Splits the signals into the cause the server waits for and the watch that delivers
    /// it. The watch never completes, so the caller races it against the rest of the process
    /// (nothing is spawned): after the first SIGINT or SIGTERM a second one exits the process
    /// at once with status 130; after SIGUSR2 the stop signals are no longer watched.
    pub fn watch(
        mut self,
    ) -> (
        impl Future<Output = Cause> + Send + 'static,
        impl Future<Output = Infallible> + Send + 'static,
    ) {
        let (cause, caused) = tokio::sync::oneshot::channel();
        let handover = self.handover();
        let watch = async move {
            tokio::select! {
                () = self.first_stop() => {}
                () = handover => {
                    let _ = cause.send(Cause::HandOver);
                    return std::future::pending().await;
                }
            }
            tracing::info!("shutdown signal received; send another to exit at once");
            let _ = cause.send(Cause::Stop);
            self.first_stop().await;
            tracing::warn!("second signal: exiting now");
            std::process::exit(130)
        };
        // The watch outlives the server; should it be dropped first, the server stops.
        let cause = async move { caused.await.unwrap_or(Cause::Stop) };
        (cause, watch)
    }

    /// Completes on SIGUSR2: a new server process is taking over (never, where there is
    /// none).
    fn handover(&mut self) -> impl Future<Output = ()> + Send + use<> {
        #[cfg(unix)]
        let usr2 = self.usr2.take();
        async move {
            #[cfg(unix)]
            if let Some(mut usr2) = usr2
                && usr2.recv().await.is_some()
            {
                tracing::info!("SIGUSR2: a new server takes over; handing over now");
                return;
            }
            std::future::pending().await
        }
    }

    #[cfg(unix)]
    async fn first_stop(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }

    #[cfg(not(unix))]
    async fn first_stop(&mut self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}
