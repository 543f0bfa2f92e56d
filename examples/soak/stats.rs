//! Numbers of the soak run: exact latency percentiles over the samples of a window, the
//! per-window accumulator every load task writes into, and a tiny deterministic random number
//! generator (so that the tool needs no extra dependency for picking topics).

use serde::Serialize;

/// Latency percentiles of one set of samples, in microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Lat {
    /// Number of samples.
    pub n: usize,
    /// Median.
    pub p50_us: u32,
    /// 99th percentile.
    pub p99_us: u32,
    /// 99.9th percentile.
    pub p999_us: u32,
    /// Largest sample.
    pub max_us: u32,
}

impl Lat {
    /// Percentiles of `samples` (sorted in place); nearest-rank, exact.
    pub fn of(samples: &mut [u32]) -> Lat {
        if samples.is_empty() {
            return Lat::default();
        }
        samples.sort_unstable();
        let at = |q: f64| {
            let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
            samples[rank - 1]
        };
        Lat {
            n: samples.len(),
            p50_us: at(0.50),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us: samples[samples.len() - 1],
        }
    }
}

/// Milliseconds with three decimals, for tables.
pub fn ms(us: u32) -> String {
    format!("{:.3}", f64::from(us) / 1000.0)
}

/// What the load tasks observed during one window.
#[derive(Debug, Default)]
pub struct Acc {
    /// Route lookups by the measuring clients: latency of each successful one, in µs.
    pub route_us: Vec<u32>,
    /// Route lookups answered with a non-zero code, not answered, or with a wrong body.
    pub route_err: u64,
    /// Route bodies checked (every `--verify-every`th).
    pub route_checked: u64,
    /// Paced route lookups not sent because the connection was still waiting for an answer.
    pub route_skipped: u64,
    /// Full registrations: latency of each successful one, in µs.
    pub reg_us: Vec<u32>,
    /// Registrations that failed.
    pub reg_err: u64,
    /// Registrations that carried a new data version.
    pub reg_changed: u64,
    /// Route lookups of the idle connections (their keep-alive), latency in µs.
    pub idle_us: Vec<u32>,
    /// Idle connections' lookups that failed.
    pub idle_err: u64,
    /// Connections the server closed under us (idle, broker or route).
    pub closed: u64,
    /// The first few error messages, for the report.
    pub errors: Vec<String>,
}

impl Acc {
    /// Keeps `msg` if fewer than a handful are kept already.
    pub fn note(&mut self, msg: String) {
        if self.errors.len() < 8 {
            self.errors.push(msg);
        }
    }

    /// Every failure counted in this window.
    pub fn failures(&self) -> u64 {
        self.route_err + self.reg_err + self.idle_err + self.closed
    }
}

/// SplitMix64: small, fast, good enough to spread load.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<u32> = (1..=1000).rev().collect();
        let l = Lat::of(&mut v);
        assert_eq!(
            (l.n, l.p50_us, l.p99_us, l.p999_us, l.max_us),
            (1000, 500, 990, 999, 1000)
        );
        assert_eq!(Lat::of(&mut []).n, 0);
    }
}
