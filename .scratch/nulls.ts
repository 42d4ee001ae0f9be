import Database from "libsql";
for (const extra of [0, 2]) {
  const db = new Database(":memory:");
  const cols = extra ? ", a TEXT, b TEXT" : "";
  db.exec(`CREATE TABLE t (id TEXT PRIMARY KEY, payload TEXT, n INTEGER${cols}) WITHOUT ROWID`);
  const ins = db.prepare(`INSERT INTO t (id, payload, n) VALUES (?, ?, ?)`);
  db.exec("BEGIN");
  for (let i = 0; i < 100000; i++) ins.run(`id-${String(i).padStart(7, "0")}`, "x".repeat(60), i);
  db.exec("COMMIT");
  const pages = db.prepare("PRAGMA page_count").get() as { page_count: number };
  const stat = db.prepare("SELECT sum(payload) AS bytes FROM dbstat WHERE name = 't'").get();
  console.log(extra, pages, stat);
}
