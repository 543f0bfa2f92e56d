//! What the gate needs to know about a request code, handed in by the request table's row:
//! the [`Permission`] an account needs to send it, and whether (and how) it is audited. The
//! gate never looks a code up itself, so a code added to a table is classified in its row.

use super::audit::Audit;
use super::policy::Permission;

/// The gate's facts about one request code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// What an account must be allowed to send it.
    pub(crate) permission: Permission,
    /// Its audit line, for admin codes the server serves; `None`: never audited.
    pub(crate) audit: Option<Audit>,
}

impl Access {
    /// A code the server does not serve: admin, so that a code added later is closed until
    /// classified, and never audited (echoing it would let anyone write to the audit log).
    pub(crate) const UNKNOWN: Access = Access {
        permission: Permission::Admin,
        audit: None,
    };

    /// An unaudited code of `permission`.
    pub(crate) const fn of(permission: Permission) -> Access {
        Access {
            permission,
            audit: None,
        }
    }

    /// An admin code with its audit line.
    pub(crate) const fn audited(audit: Audit) -> Access {
        Access {
            permission: Permission::Admin,
            audit: Some(audit),
        }
    }
}
