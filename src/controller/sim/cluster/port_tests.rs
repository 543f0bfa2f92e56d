//! The simulation's controller port: a client request reaches a node through the
//! controller's request table (`dispatch::CONTROLLER`) and its handlers, as a frame on the
//! controller port would. Kept apart (a `_tests.rs` file) because it is the one place the
//! simulation, which lives in `controller`, reaches up into `dispatch` and `handlers`.

use std::net::SocketAddr;

use tokio::time::Instant;

use super::Cluster;
use crate::dispatch::{CONTROLLER, Handler};
use crate::handlers::Context;
use crate::protocol::RemotingCommand;
use crate::state::ConnId;

impl Cluster {
    /// Serves `req` on node `i` as its controller port would, from connection `conn`;
    /// `None` when the node is down.
    pub(in crate::controller::sim) async fn serve(
        &self,
        i: usize,
        conn: ConnId,
        req: RemotingCommand,
    ) -> Option<RemotingCommand> {
        let node = self.nodes.lock()[i].clone()?;
        let peer: SocketAddr = "10.0.1.1:40000".parse().expect("an address");
        let route = CONTROLLER.route(req.code)?;
        let later = {
            let ctx = Context::new(&node.state, conn, peer, Instant::now())
                .with_controller(Some(&node.controller));
            match route.handler {
                Handler::Sync(h) => return h(&ctx, &req).ok().map(|r| r.response),
                Handler::Async(h) => h(&ctx, &req),
            }
        };
        later.await.ok().map(|r| r.response)
    }
}
