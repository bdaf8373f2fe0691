//! The SQLite database: state that must survive restarts (later: hosts, instance ledger, transfer
//! journal). Schema changes are an ordered list of migrations; `PRAGMA user_version` records how
//! many have run. Migrations are append-only: never edit one that has shipped.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

use crate::infra::error::CoreError;

/// Ordered schema migrations. Index + 1 is the schema version after it runs.
const MIGRATIONS: &[&str] = &[
    // 1: operation log (every long operation started through the op runner) and key/value metadata.
    "CREATE TABLE operations (
        id          TEXT PRIMARY KEY,
        kind        TEXT NOT NULL,
        started_ms  INTEGER NOT NULL,
        finished_ms INTEGER,
        outcome     TEXT            -- 'ok', 'cancelled' or an error code; NULL while running
     );
     CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    // 2: the user's own GPU prices (gpurent ships none it cannot source), one offer per card.
    "CREATE TABLE card_prices (
        card_id    TEXT PRIMARY KEY,
        offer_json TEXT NOT NULL,   -- estimate::Offer as JSON
        updated_ms INTEGER NOT NULL
     );",
    // 3: SSH keys (metadata only; the private key lives in the OS keychain under keychain_account).
    "CREATE TABLE keys (
        label            TEXT PRIMARY KEY,
        algorithm        TEXT NOT NULL,      -- OpenSSH name: ssh-ed25519, ssh-rsa, ...
        bits             INTEGER,            -- RSA size; NULL where fixed
        fingerprint      TEXT NOT NULL UNIQUE, -- SHA256:...
        public_key       TEXT NOT NULL,      -- the authorized_keys line
        comment          TEXT NOT NULL,
        has_passphrase   INTEGER NOT NULL,
        origin           TEXT NOT NULL,      -- 'generated' | 'imported'
        keychain_account TEXT NOT NULL UNIQUE,
        created_ms       INTEGER NOT NULL
     );",
    // 4: saved SSH hosts, their pinned host keys (target and jump host) and the re-pin history.
    "CREATE TABLE hosts (
        label          TEXT PRIMARY KEY,
        address        TEXT NOT NULL,
        port           INTEGER NOT NULL,
        user           TEXT NOT NULL,
        jump_address   TEXT,              -- ssh -J host; NULL when direct
        jump_port      INTEGER,
        jump_user      TEXT,
        key_label      TEXT,              -- keys.label used to log in (no foreign key: keys may go)
        provider       TEXT,
        notes          TEXT,
        created_ms     INTEGER NOT NULL,
        last_used_ms   INTEGER,
        last_check_json TEXT              -- remote::HostCheck as JSON
     );
     CREATE TABLE host_keys (
        host_label  TEXT NOT NULL REFERENCES hosts(label) ON DELETE CASCADE ON UPDATE CASCADE,
        role        TEXT NOT NULL,        -- 'target' | 'jump'
        key_type    TEXT NOT NULL,        -- ssh-ed25519, ecdsa-sha2-nistp256, ...
        key_base64  TEXT NOT NULL,
        fingerprint TEXT NOT NULL,        -- SHA256:...
        pinned_ms   INTEGER NOT NULL,
        source      TEXT NOT NULL,        -- 'user' | 'known_hosts' | 'repin'
        PRIMARY KEY (host_label, role)
     );
     CREATE TABLE host_key_history (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        host_label      TEXT NOT NULL REFERENCES hosts(label) ON DELETE CASCADE ON UPDATE CASCADE,
        role            TEXT NOT NULL,
        changed_ms      INTEGER NOT NULL,
        changed_by      TEXT NOT NULL,    -- who confirmed the re-pin (OS user name or 'user')
        old_fingerprint TEXT NOT NULL,
        new_fingerprint TEXT NOT NULL
     );",
    // 5: the transfer journal: one row per transfer (file or folder), and per file its chunks with
    // the SHA-256 of the source bytes and whether they were sent / verified on the other side.
    "CREATE TABLE transfers (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        host_label      TEXT NOT NULL,     -- hosts.label (no foreign key: the journal outlives hosts)
        direction       TEXT NOT NULL,     -- 'upload' | 'download'
        kind            TEXT NOT NULL,     -- 'file' | 'tree'
        local_path      TEXT NOT NULL,
        remote_path     TEXT NOT NULL,
        temp_path       TEXT NOT NULL,     -- where bytes land before the rename
        options_json    TEXT NOT NULL,     -- transfer::TransferOptions
        state           TEXT NOT NULL,     -- pending | partial | done | failed | cancelled
        total_bytes     INTEGER,
        done_bytes      INTEGER NOT NULL,
        files_total     INTEGER NOT NULL,
        files_done      INTEGER NOT NULL,
        source_size     INTEGER,
        source_mtime_ms INTEGER,
        sha256          TEXT,
        verified        INTEGER NOT NULL,
        attempts        INTEGER NOT NULL,
        error_code      TEXT,
        error_message   TEXT,
        created_ms      INTEGER NOT NULL,
        updated_ms      INTEGER NOT NULL
     );
     CREATE TABLE transfer_chunks (
        transfer_id INTEGER NOT NULL REFERENCES transfers(id) ON DELETE CASCADE,
        idx         INTEGER NOT NULL,
        offset      INTEGER NOT NULL,
        len         INTEGER NOT NULL,
        sha256      TEXT,                  -- of the source bytes, once read
        state       TEXT NOT NULL,         -- pending | sent | verified
        PRIMARY KEY (transfer_id, idx)
     );",
    // 6: provider accounts (name and provider only; the API key lives in the OS keychain), the
    // instance ledger (an intent row before any create; the id is the provider label) and every
    // timestamped state change of an instance (billing computes cost from these).
    "CREATE TABLE provider_accounts (
        name             TEXT PRIMARY KEY,
        provider         TEXT NOT NULL,
        keychain_account TEXT NOT NULL,
        account_label    TEXT,
        added_ms         INTEGER NOT NULL,
        checked_ms       INTEGER
     );
     CREATE TABLE instances (
        id                       TEXT PRIMARY KEY,
        provider                 TEXT NOT NULL,
        account                  TEXT NOT NULL,
        provider_instance_id     TEXT,
        offer_id                 TEXT NOT NULL,
        gpu                      TEXT NOT NULL,
        gpu_count                INTEGER NOT NULL,
        price_per_hour_usd       REAL NOT NULL,
        disk_gb                  INTEGER NOT NULL,
        storage_usd_per_gb_month REAL,
        image                    TEXT NOT NULL,
        host_label               TEXT,
        state                    TEXT NOT NULL,
        created_ms               INTEGER NOT NULL,
        updated_ms               INTEGER NOT NULL,
        closed_ms                INTEGER
     );
     CREATE INDEX instances_by_provider_id ON instances(provider, provider_instance_id);
     CREATE TABLE instance_events (
        instance_id TEXT NOT NULL REFERENCES instances(id),
        at_ms       INTEGER NOT NULL,
        state       TEXT NOT NULL,
        source      TEXT NOT NULL,
        detail      TEXT
     );
     CREATE INDEX instance_events_by_instance ON instance_events(instance_id, at_ms);",
    // 7: the guard set on each host, the decisions fetched from it, a pasted host's own rate, and
    // budgets.
    "CREATE TABLE guards (
        host_label      TEXT PRIMARY KEY,  -- hosts.label (no foreign key: the record outlives the host)
        spec_json       TEXT NOT NULL,     -- guard::GuardSpec
        action_command  TEXT NOT NULL,     -- what the guard runs when it fires
        deadline_host_s INTEGER,           -- the absolute deadline, host clock (unix s)
        boot            TEXT NOT NULL,     -- 'systemd' | 'crontab' | 'none'
        installed_ms    INTEGER NOT NULL,
        off_ms          INTEGER            -- switched off; NULL while set
     );
     CREATE TABLE guard_decisions (
        host_label TEXT NOT NULL,
        at_s       INTEGER NOT NULL,       -- host clock
        decision   TEXT NOT NULL,          -- keep | idle | warn | snoozed | act | act_failed | acted
        why        TEXT NOT NULL,
        line_json  TEXT NOT NULL,          -- guard::Decision as the host logged it
        fetched_ms INTEGER NOT NULL,
        PRIMARY KEY (host_label, at_s, decision)
     );
     CREATE TABLE host_rates (
        host_label          TEXT PRIMARY KEY,
        usd_per_hour        REAL NOT NULL,
        rule                TEXT NOT NULL, -- per-second | per-minute | per-hour-rounded-up
        storage_usd_per_day REAL,
        since_ms            INTEGER NOT NULL, -- running (billed) since
        stopped_ms          INTEGER,          -- stopped since (storage still bills); NULL: running
        updated_ms          INTEGER NOT NULL
     );
     CREATE TABLE budgets (
        scope       TEXT NOT NULL,         -- 'total' or a host label
        period      TEXT NOT NULL,         -- 'day' | 'month'
        usd         REAL NOT NULL,
        stop_at_100 INTEGER NOT NULL,      -- the user chose: stop the machine at 100 %
        updated_ms  INTEGER NOT NULL,
        PRIMARY KEY (scope, period)
     );",
    // 8: what the app as a second guard already told
    // the user (one row per notice key), so a notice goes out once, across restarts too.
    "CREATE TABLE notices_sent (
        key      TEXT PRIMARY KEY,         -- billing::watch::Notice.key
        kind     TEXT NOT NULL,            -- billing::watch::NoticeKind
        json     TEXT NOT NULL,            -- the Notice as sent
        sent_ms  INTEGER NOT NULL
     );",
    // 9: a pasted host's rate history, append-only: every rate the user set (from when it
    // bills), every stop, and what the guard on the machine recorded (it powered the machine
    // off; it was running again). Cost is computed per period from these; host_rates stays the
    // current rate. The rates saved so far become the first rows.
    "CREATE TABLE host_rate_events (
        host_label          TEXT NOT NULL,
        at_ms               INTEGER NOT NULL, -- when it takes effect (this computer's clock)
        kind                TEXT NOT NULL,    -- rate | stopped | powered_off | running
        usd_per_hour        REAL,             -- kind 'rate'
        rule                TEXT,
        storage_usd_per_day REAL,
        source              TEXT NOT NULL,    -- user | guard
        detail              TEXT,
        recorded_ms         INTEGER NOT NULL
     );
     CREATE INDEX host_rate_events_by_host ON host_rate_events(host_label, at_ms);
     INSERT INTO host_rate_events(host_label, at_ms, kind, usd_per_hour, rule, storage_usd_per_day, source, recorded_ms)
       SELECT host_label, since_ms, 'rate', usd_per_hour, rule, storage_usd_per_day, 'user', updated_ms FROM host_rates;
     INSERT INTO host_rate_events(host_label, at_ms, kind, source, recorded_ms)
       SELECT host_label, stopped_ms, 'stopped', 'user', updated_ms FROM host_rates WHERE stopped_ms IS NOT NULL;",
    // 10: money carries its currency (ISO 4217: 'USD' | 'CNY'; never converted). Everything saved
    // before is USD: a pasted host's rate (current and every rate row of its history) and every
    // budget. A budget counts only the machines billed in its currency.
    "ALTER TABLE host_rates ADD COLUMN currency TEXT NOT NULL DEFAULT 'USD';
     ALTER TABLE host_rate_events ADD COLUMN currency TEXT;
     UPDATE host_rate_events SET currency = 'USD' WHERE kind = 'rate';
     ALTER TABLE budgets ADD COLUMN currency TEXT NOT NULL DEFAULT 'USD';",
    // 11: the platform a pasted host was rented on (billing::platforms; NULL: not picked).
    "ALTER TABLE host_rates ADD COLUMN platform TEXT;
     ALTER TABLE host_rate_events ADD COLUMN platform TEXT;",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Run `f` on a store kept behind a mutex, locked for this call only (a step locks per step,
/// never across a wait or a remote call). A panic while holding the lock leaves the connection
/// itself usable.
pub fn locked<T, E>(
    store: &std::sync::Mutex<Store>,
    f: impl FnOnce(&Store) -> Result<T, E>,
) -> Result<T, E> {
    let guard = store.lock().unwrap_or_else(|p| p.into_inner());
    f(&guard)
}

/// An open database. Not `Sync`: the shell keeps it behind a mutex.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
}

impl Store {
    /// Open (creating if needed) and migrate to the current schema.
    pub fn open(path: &Path) -> Result<Self, CoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| CoreError::io(dir, e))?;
        }
        Self::init(Connection::open(path)?)
    }

    /// An in-memory database (tests).
    pub fn open_in_memory() -> Result<Self, CoreError> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(mut conn: Connection) -> Result<Self, CoreError> {
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let _: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        migrate(&mut conn)?;
        Ok(Store { conn })
    }

    pub fn schema_version(&self) -> Result<i64, CoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// Borrow the connection (domain modules add their own queries).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    pub fn meta_get(&self, key: &str) -> Result<Option<String>, CoreError> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    pub fn meta_set(&self, key: &str, value: &str) -> Result<(), CoreError> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    /// Record that an operation started.
    pub fn op_started(&self, id: &str, kind: &str, now_ms: i64) -> Result<(), CoreError> {
        self.conn.execute(
            "INSERT OR REPLACE INTO operations(id, kind, started_ms) VALUES (?1, ?2, ?3)",
            params![id, kind, now_ms],
        )?;
        Ok(())
    }

    /// Record how an operation ended (`ok`, `cancelled` or an error code).
    pub fn op_finished(&self, id: &str, outcome: &str, now_ms: i64) -> Result<(), CoreError> {
        self.conn.execute(
            "UPDATE operations SET finished_ms = ?2, outcome = ?3 WHERE id = ?1",
            params![id, now_ms, outcome],
        )?;
        Ok(())
    }

    /// `PRAGMA quick_check`: `Ok(())` when the file is sound.
    pub fn check_integrity(&self) -> Result<Result<(), String>, CoreError> {
        let verdict: String = self
            .conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        Ok(if verdict == "ok" {
            Ok(())
        } else {
            Err(verdict)
        })
    }
}

fn migrate(conn: &mut Connection) -> Result<(), CoreError> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if current > SCHEMA_VERSION {
        return Err(CoreError::DatabaseTooNew {
            found: current,
            known: SCHEMA_VERSION,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
        tracing::info!(version = i + 1, "database migrated");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_to_current_and_reopens() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("d/db.sqlite3");
        {
            let s = Store::open(&path).expect("open");
            assert_eq!(s.schema_version().expect("v"), SCHEMA_VERSION);
            s.meta_set("k", "v1").expect("set");
            s.meta_set("k", "v2").expect("upsert");
        }
        let s = Store::open(&path).expect("reopen");
        assert_eq!(s.meta_get("k").expect("get").as_deref(), Some("v2"));
        assert_eq!(s.meta_get("missing").expect("get"), None);
        assert_eq!(s.check_integrity().expect("check"), Ok(()));
    }

    /// Migration 10: the rates and budgets saved before currencies existed are USD.
    #[test]
    fn money_saved_before_currencies_migrates_as_usd() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("db.sqlite3");
        {
            let mut c = Connection::open(&path).expect("open");
            for (i, sql) in MIGRATIONS.iter().enumerate().take(9) {
                let tx = c.transaction().expect("tx");
                tx.execute_batch(sql).expect("migration");
                tx.pragma_update(None, "user_version", (i + 1) as i64)
                    .expect("version");
                tx.commit().expect("commit");
            }
            c.execute_batch(
                "INSERT INTO host_rates(host_label, usd_per_hour, rule, storage_usd_per_day, since_ms, stopped_ms, updated_ms)
                   VALUES ('box', 0.4, 'per-second', NULL, 10, NULL, 10);
                 INSERT INTO host_rate_events(host_label, at_ms, kind, usd_per_hour, rule, source, recorded_ms)
                   VALUES ('box', 10, 'rate', 0.4, 'per-second', 'user', 10);
                 INSERT INTO host_rate_events(host_label, at_ms, kind, source, recorded_ms)
                   VALUES ('box', 20, 'stopped', 'user', 20);
                 INSERT INTO budgets(scope, period, usd, stop_at_100, updated_ms) VALUES ('total', 'day', 5, 0, 1);",
            )
            .expect("old rows");
        }
        let s = Store::open(&path).expect("migrate");
        assert_eq!(s.schema_version().expect("v"), SCHEMA_VERSION);
        let q = |sql: &str| -> Vec<Option<String>> {
            let mut st = s.conn().prepare(sql).expect("prepare");
            st.query_map([], |r| r.get(0))
                .expect("query")
                .collect::<Result<Vec<_>, _>>()
                .expect("rows")
        };
        assert_eq!(q("SELECT currency FROM host_rates"), [Some("USD".into())]);
        assert_eq!(
            q("SELECT currency FROM host_rate_events ORDER BY at_ms"),
            [Some("USD".into()), None],
            "rate rows are USD; a stop has no amount"
        );
        assert_eq!(q("SELECT currency FROM budgets"), [Some("USD".into())]);
    }

    #[test]
    fn refuses_a_newer_schema() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("db.sqlite3");
        {
            let c = Connection::open(&path).expect("open");
            c.pragma_update(None, "user_version", 99).expect("set");
        }
        match Store::open(&path) {
            Err(CoreError::DatabaseTooNew { found: 99, .. }) => {}
            other => panic!("expected DatabaseTooNew, got {other:?}"),
        }
    }

    #[test]
    fn operation_log() {
        let s = Store::open_in_memory().expect("open");
        s.op_started("op-1", "self_check", 1000).expect("start");
        s.op_finished("op-1", "ok", 1500).expect("finish");
        let (fin, out): (i64, String) = s
            .conn()
            .query_row(
                "SELECT finished_ms, outcome FROM operations WHERE id='op-1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("row");
        assert_eq!((fin, out.as_str()), (1500, "ok"));
    }
}
