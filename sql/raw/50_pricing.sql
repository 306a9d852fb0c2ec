-- Writer: pipelines/sources/pricing.py (validated user price files). Replaced per source_file.
-- grain: one row per (source_file, line_no)
create table if not exists raw.price_sheet (
    source_file         varchar   not null,
    line_no             integer   not null,
    provider            varchar   not null,
    region              varchar   not null,
    instance_type       varchar   not null,
    hourly_usd          double    not null,
    spot_hourly_usd     double,
    _extracted_at       timestamp not null
);

-- Kubecost/OpenCost CSV custom pricing schema. grain: one row per (source_file, line_no)
create table if not exists raw.price_node_csv (
    source_file             varchar   not null,
    line_no                 integer   not null,
    end_timestamp           varchar,
    instance_id             varchar   not null,
    region                  varchar,
    asset_class             varchar   not null,   -- node | gpu | pv
    instance_id_field       varchar,
    instance_type           varchar,
    market_price_hourly     double    not null,
    version                 varchar,
    _extracted_at           timestamp not null
);

-- OpenCost default.json-shaped custom prices, one row per key, value converted to hourly.
-- grain: one row per (source_file, price_key)
create table if not exists raw.price_custom (
    source_file         varchar   not null,
    price_key           varchar   not null,       -- CPU, spotCPU, RAM, spotRAM, GPU, spotGPU, storage, zoneNetworkEgress, regionNetworkEgress, internetNetworkEgress, LoadBalancer...
    value_as_given      double    not null,
    convention          varchar   not null,       -- 'hourly' | 'monthly' (monthly values are divided by 730)
    hourly_value        double    not null,
    _extracted_at       timestamp not null
);
