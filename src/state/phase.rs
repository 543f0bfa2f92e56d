//! Where the server is in its life: serving, handing over to a new process, shutting down
//! (draining, or going away), frozen. One value, moved only forward.
//!
//! Java keeps these facts in its remoting server's shutting-down flag and in the order of
//! `NamesrvController#shutdown`'s steps; here they are one [`Phase`], held in an
//! [`AtomicPhase`] so that every request and connection reads it without a lock.

use std::sync::atomic::{AtomicU8, Ordering};

/// The server's phase. The order of the variants is the order of a life: a transition never
/// goes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Serving as usual.
    Serving,
    /// A new process takes over the port: the coming shutdown skips the `GO_AWAY` wait,
    /// since the clients it would send away are queued for the new process.
    HandingOver,
    /// Shutting down (no longer ready), answering requests as usual.
    Draining,
    /// Shutting down gracefully (`enableShutdownGracefully`): requests of clients newer than
    /// 5.3.1 are answered `GO_AWAY` from now until the process exits.
    GoingAway,
    /// Shutdown is closing every connection: a closing connection no longer unregisters its
    /// brokers, so that the final route snapshot keeps them. `going_away` tells whether
    /// `GO_AWAY` is still answered (it was in the phase before).
    Frozen {
        /// Whether the shutdown was going away when the routes froze.
        going_away: bool,
    },
}

/// What moves the phase on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// SIGUSR2 from a new process taking over.
    HandOver,
    /// Shutdown begins.
    BeginShutdown,
    /// The graceful shutdown tells newer clients to go away.
    GoAway,
    /// Shutdown closes every connection.
    Freeze,
}

impl Phase {
    /// The phase after `event`; the same phase when `event` does not apply to it (a second
    /// signal, a freeze that already happened).
    pub(super) fn after(self, event: Event) -> Phase {
        use Phase::*;
        match (self, event) {
            (Serving, Event::HandOver) => HandingOver,
            (Serving | HandingOver, Event::BeginShutdown) => Draining,
            (Draining, Event::GoAway) => GoingAway,
            (Serving | HandingOver | Draining, Event::Freeze) => Frozen { going_away: false },
            (GoingAway, Event::Freeze) => Frozen { going_away: true },
            (phase, _) => phase,
        }
    }

    /// Whether shutdown has begun.
    pub(crate) fn shutting_down(self) -> bool {
        matches!(
            self,
            Phase::Draining | Phase::GoingAway | Phase::Frozen { .. }
        )
    }

    /// Whether newer clients are answered `GO_AWAY`.
    pub(crate) fn going_away(self) -> bool {
        matches!(self, Phase::GoingAway | Phase::Frozen { going_away: true })
    }

    /// Whether closing connections leave their brokers registered.
    pub(crate) fn routes_frozen(self) -> bool {
        matches!(self, Phase::Frozen { .. })
    }

    fn to_u8(self) -> u8 {
        match self {
            Phase::Serving => 0,
            Phase::HandingOver => 1,
            Phase::Draining => 2,
            Phase::GoingAway => 3,
            Phase::Frozen { going_away: false } => 4,
            Phase::Frozen { going_away: true } => 5,
        }
    }

    fn from_u8(n: u8) -> Phase {
        match n {
            0 => Phase::Serving,
            1 => Phase::HandingOver,
            2 => Phase::Draining,
            3 => Phase::GoingAway,
            4 => Phase::Frozen { going_away: false },
            _ => Phase::Frozen { going_away: true },
        }
    }
}

/// A [`Phase`] shared by every task, read without a lock.
#[derive(Debug)]
pub(super) struct AtomicPhase(AtomicU8);

impl AtomicPhase {
    /// Serving.
    pub(super) fn new() -> AtomicPhase {
        AtomicPhase(AtomicU8::new(Phase::Serving.to_u8()))
    }

    /// The phase now.
    pub(super) fn load(&self) -> Phase {
        Phase::from_u8(self.0.load(Ordering::Acquire))
    }

    /// Moves the phase on by `event` (atomically: two events at once both apply).
    pub(super) fn apply(&self, event: Event) {
        let _ = self
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(Phase::from_u8(n).after(event).to_u8())
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Phase; 6] = [
        Phase::Serving,
        Phase::HandingOver,
        Phase::Draining,
        Phase::GoingAway,
        Phase::Frozen { going_away: false },
        Phase::Frozen { going_away: true },
    ];
    const EVENTS: [Event; 4] = [
        Event::HandOver,
        Event::BeginShutdown,
        Event::GoAway,
        Event::Freeze,
    ];

    #[test]
    fn every_transition_goes_forward() {
        for phase in ALL {
            assert_eq!(Phase::from_u8(phase.to_u8()), phase);
            for event in EVENTS {
                let next = phase.after(event);
                assert!(
                    next.to_u8() >= phase.to_u8(),
                    "{phase:?} + {event:?} → {next:?}"
                );
                // Once shutting down or going away, always so; frozen routes stay frozen.
                assert!(!phase.shutting_down() || next.shutting_down());
                assert!(!phase.going_away() || next.going_away());
                assert!(!phase.routes_frozen() || next.routes_frozen());
            }
        }
    }

    #[test]
    fn the_three_ways_a_server_ends() {
        let run = |events: &[Event]| {
            let phase = AtomicPhase::new();
            let mut seen = Vec::new();
            for &event in events {
                phase.apply(event);
                seen.push(phase.load());
            }
            seen
        };
        use Event::*;
        // A plain stop.
        assert_eq!(
            run(&[BeginShutdown, Freeze]),
            [Phase::Draining, Phase::Frozen { going_away: false }]
        );
        // A graceful stop keeps answering GO_AWAY after the freeze.
        let graceful = run(&[BeginShutdown, GoAway, Freeze]);
        assert_eq!(graceful[1], Phase::GoingAway);
        assert!(graceful[2].going_away() && graceful[2].routes_frozen());
        // A takeover: shutdown follows at once, and there is nobody to tell to go away.
        assert_eq!(
            run(&[HandOver, BeginShutdown, Freeze]),
            [
                Phase::HandingOver,
                Phase::Draining,
                Phase::Frozen { going_away: false }
            ]
        );
    }
}
