//! The consistency conditions of clause 3.3.2, run as SQL against a built database, the
//! same text on every engine (portable SQL: no `IS DISTINCT FROM`, no `FULL JOIN`). Each
//! query counts the rows (warehouses, districts, orders, customers) that break the
//! condition: 0 means it holds. 1-4 are the ones the spec requires to be demonstrated;
//! 5-10 and 12 hold for any correct run too; 11 only for a freshly loaded database.
//! 10 and 12 touch every order line of a customer, so they are checked on the customers
//! of the first and last warehouses' first district (the spec's "randomly selected
//! customers").

use serde::{Deserialize, Serialize};

use crate::backend::Conn;

/// One condition's outcome.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckResult {
    /// Condition number in clause 3.3.2.
    pub id: u8,
    pub name: String,
    /// Rows that break the condition (0: it holds).
    pub violations: i64,
}

impl CheckResult {
    pub fn passed(&self) -> bool {
        self.violations == 0
    }

    /// A failed condition as results and refusals say it: "condition 1 (W_YTD =
    /// sum(D_YTD)) fails for 1 rows".
    pub fn failure(&self) -> String {
        format!(
            "condition {} ({}) fails for {} rows",
            self.id, self.name, self.violations
        )
    }
}

struct Cond {
    id: u8,
    name: &'static str,
    sql: &'static str,
}

const CONDITIONS: &[Cond] = &[
    Cond {
        id: 1,
        name: "W_YTD = sum(D_YTD)",
        sql: "SELECT count(*) FROM warehouse w JOIN (SELECT d_w_id, sum(d_ytd) s FROM district \
              GROUP BY d_w_id) d ON d.d_w_id = w.w_id WHERE w.w_ytd <> d.s",
    },
    Cond {
        id: 2,
        name: "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)",
        sql: "SELECT count(*) FROM district d \
              LEFT JOIN (SELECT o_w_id, o_d_id, max(o_id) mo FROM orders GROUP BY 1, 2) o \
                ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id \
              LEFT JOIN (SELECT no_w_id, no_d_id, max(no_o_id) mno FROM new_order GROUP BY 1, 2) n \
                ON n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id \
              WHERE o.mo IS NULL OR o.mo <> d.d_next_o_id - 1 \
                 OR (n.mno IS NOT NULL AND n.mno <> d.d_next_o_id - 1)",
    },
    Cond {
        id: 3,
        name: "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW-ORDER)",
        sql: "SELECT count(*) FROM (SELECT max(no_o_id) - min(no_o_id) + 1 - count(*) x \
              FROM new_order GROUP BY no_w_id, no_d_id) t WHERE x <> 0",
    },
    Cond {
        id: 4,
        name: "sum(O_OL_CNT) = count(ORDER-LINE)",
        // Per district (every order and line belongs to one): NULL-safe inequality.
        sql: "SELECT count(*) FROM district d \
              LEFT JOIN (SELECT o_w_id, o_d_id, sum(o_ol_cnt) s FROM orders GROUP BY 1, 2) o \
                ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id \
              LEFT JOIN (SELECT ol_w_id, ol_d_id, count(*) c FROM order_line GROUP BY 1, 2) l \
                ON l.ol_w_id = d.d_w_id AND l.ol_d_id = d.d_id \
              WHERE o.s <> l.c OR (o.s IS NULL) <> (l.c IS NULL)",
    },
    Cond {
        id: 5,
        name: "O_CARRIER_ID null <=> NEW-ORDER row exists",
        sql: "SELECT count(*) FROM orders o LEFT JOIN new_order n ON n.no_w_id = o.o_w_id \
              AND n.no_d_id = o.o_d_id AND n.no_o_id = o.o_id \
              WHERE (o.o_carrier_id IS NULL) <> (n.no_o_id IS NOT NULL)",
    },
    Cond {
        id: 6,
        name: "O_OL_CNT = ORDER-LINE rows per order",
        sql: "SELECT count(*) FROM orders o LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, \
              count(*) c FROM order_line GROUP BY 1, 2, 3) l ON l.ol_w_id = o.o_w_id \
              AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id \
              WHERE coalesce(l.c, 0) <> o.o_ol_cnt",
    },
    Cond {
        id: 7,
        name: "OL_DELIVERY_D null <=> O_CARRIER_ID null",
        sql: "SELECT count(*) FROM order_line l JOIN orders o ON o.o_w_id = l.ol_w_id \
              AND o.o_d_id = l.ol_d_id AND o.o_id = l.ol_o_id \
              WHERE (l.ol_delivery_d IS NULL) <> (o.o_carrier_id IS NULL)",
    },
    Cond {
        id: 8,
        name: "W_YTD = sum(H_AMOUNT)",
        sql: "SELECT count(*) FROM warehouse w LEFT JOIN (SELECT h_w_id, sum(h_amount) s \
              FROM history GROUP BY 1) h ON h.h_w_id = w.w_id \
              WHERE h.s IS NULL OR w.w_ytd <> h.s",
    },
    Cond {
        id: 9,
        name: "D_YTD = sum(H_AMOUNT) per district",
        sql: "SELECT count(*) FROM district d LEFT JOIN (SELECT h_w_id, h_d_id, sum(h_amount) s \
              FROM history GROUP BY 1, 2) h ON h.h_w_id = d.d_w_id AND h.h_d_id = d.d_id \
              WHERE h.s IS NULL OR d.d_ytd <> h.s",
    },
    Cond {
        id: 10,
        name: "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT) (sampled customers)",
        sql: "WITH c AS (SELECT * FROM customer WHERE c_d_id = 1 AND c_w_id IN \
              ((SELECT min(w_id) FROM warehouse), (SELECT max(w_id) FROM warehouse))), \
              ol AS (SELECT o.o_w_id w, o.o_d_id d, o.o_c_id cid, sum(l.ol_amount) s \
                FROM orders o JOIN order_line l ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id \
                AND l.ol_o_id = o.o_id WHERE l.ol_delivery_d IS NOT NULL AND o.o_d_id = 1 \
                AND o.o_w_id IN (SELECT DISTINCT c_w_id FROM c) GROUP BY 1, 2, 3), \
              h AS (SELECT h_c_w_id w, h_c_d_id d, h_c_id cid, sum(h_amount) s FROM history \
                WHERE h_c_d_id = 1 AND h_c_w_id IN (SELECT DISTINCT c_w_id FROM c) GROUP BY 1, 2, 3) \
              SELECT count(*) FROM c LEFT JOIN ol ON ol.w = c.c_w_id AND ol.d = c.c_d_id \
                AND ol.cid = c.c_id LEFT JOIN h ON h.w = c.c_w_id AND h.d = c.c_d_id \
                AND h.cid = c.c_id \
              WHERE c.c_balance <> coalesce(ol.s, 0) - coalesce(h.s, 0)",
    },
    Cond {
        id: 12,
        name: "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT) (sampled customers)",
        sql: "WITH c AS (SELECT * FROM customer WHERE c_d_id = 1 AND c_w_id IN \
              ((SELECT min(w_id) FROM warehouse), (SELECT max(w_id) FROM warehouse))), \
              ol AS (SELECT o.o_w_id w, o.o_d_id d, o.o_c_id cid, sum(l.ol_amount) s \
                FROM orders o JOIN order_line l ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id \
                AND l.ol_o_id = o.o_id WHERE l.ol_delivery_d IS NOT NULL AND o.o_d_id = 1 \
                AND o.o_w_id IN (SELECT DISTINCT c_w_id FROM c) GROUP BY 1, 2, 3) \
              SELECT count(*) FROM c LEFT JOIN ol ON ol.w = c.c_w_id AND ol.d = c.c_d_id \
                AND ol.cid = c.c_id \
              WHERE c.c_balance + c.c_ytd_payment <> coalesce(ol.s, 0)",
    },
];

const INITIAL_ONLY: Cond = Cond {
    id: 11,
    name: "count(ORDER) - count(NEW-ORDER) = 2100 per district (initial population)",
    sql: "SELECT count(*) FROM district d \
          LEFT JOIN (SELECT o_w_id, o_d_id, count(*) c FROM orders GROUP BY 1, 2) o \
            ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id \
          LEFT JOIN (SELECT no_w_id, no_d_id, count(*) c FROM new_order GROUP BY 1, 2) n \
            ON n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id \
          WHERE coalesce(o.c, 0) - coalesce(n.c, 0) <> 2100",
};

/// Run conditions 1-10 and 12 (and 11 with `initial`, right after a build).
pub fn run(client: &mut dyn Conn, initial: bool) -> anyhow::Result<Vec<CheckResult>> {
    // One snapshot for all conditions, so a concurrent writer cannot make them disagree.
    client.begin_snapshot()?;
    let mut out = Vec::new();
    let extra = if initial { Some(&INITIAL_ONLY) } else { None };
    for c in CONDITIONS.iter().chain(extra) {
        // Each condition is a scan of its tables (minutes on a big build): a stop asked
        // for (Ctrl-C) ends the check before the next.
        if engine::stop::stop_requested() {
            anyhow::bail!("stopped: the check was interrupted before it ended");
        }
        let n = client
            .query_i64(c.sql)
            .map_err(|e| anyhow::anyhow!("consistency condition {} ({}): {e:#}", c.id, c.name))?;
        out.push(CheckResult {
            id: c.id,
            name: c.name.to_string(),
            violations: n,
        });
    }
    client.end_snapshot()?;
    out.sort_by_key(|c| c.id);
    Ok(out)
}
