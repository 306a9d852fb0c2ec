// Reads kubeledger's serving copy with @duckdb/node-api (the client Evidence's DuckDB source uses) in a loop, as a
// BI tool would: open read-only, query, close. Also keeps one connection to lake.duckdb open for the whole run.
// Used by tests/integration/test_bi_clients.py; one JSON line per read, errors included, until <stop> exists.
//
//   node read_loop.cjs <serving.duckdb> <lake.duckdb> <out.jsonl> <stop file>
'use strict';
const fs = require('fs');
const { DuckDBInstance } = require('@duckdb/node-api');

const [serving, lake, outPath, stopPath] = process.argv.slice(2);

const DAYS = {
  alloc: 'select usage_date::varchar as d, count(*)::integer as n, sum(total_cost) as c ' +
    'from marts.fct_allocation_daily group by 1 order by 1',
  cluster: 'select usage_date::varchar as d, count(*)::integer as n, sum(total_cost) as c ' +
    'from marts.fct_cluster_daily group by 1 order by 1',
  bi: 'select usage_date::varchar as d, count(*)::integer as n, sum(total_cost) as c ' +
    'from bi.namespace_daily group by 1 order by 1',
};

async function rows(con, sql) {
  const reader = await con.runAndReadAll(sql);
  return reader.getRowObjectsJson().map((r) => [r.d, r.n, Number(r.c)]);
}

async function readServing() {
  const instance = await DuckDBInstance.create(serving, { access_mode: 'READ_ONLY' });
  const con = await instance.connect();
  try {
    const rec = {};
    for (const [name, sql] of Object.entries(DAYS)) rec[name] = await rows(con, sql);
    const v = await con.runAndReadAll('select version() as v');
    rec.version = v.getRowObjectsJson()[0].v;
    return rec;
  } finally {
    con.closeSync();
    instance.closeSync();
  }
}

async function main() {
  const out = fs.openSync(outPath, 'w');
  const lakeInstance = await DuckDBInstance.create(lake, { access_mode: 'READ_ONLY' });
  const lakeCon = await lakeInstance.connect();
  try {
    for (;;) {
      const stopping = fs.existsSync(stopPath);
      const t = Date.now() / 1000;
      let rec;
      try {
        rec = await readServing();
        rec.lake = await rows(lakeCon, DAYS.alloc); // the same connection all along
      } catch (err) {
        rec = { error: String(err && err.stack ? err.stack : err) };
      }
      rec.t = t;
      fs.writeSync(out, JSON.stringify(rec) + '\n');
      if (stopping) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    lakeCon.closeSync();
    lakeInstance.closeSync();
    fs.closeSync(out);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
