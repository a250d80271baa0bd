-- name: table_health
-- description: Per table over a range of gaming days: rounds, hands and hours dealt, rounds and hands per hour, findings by severity, packs dealt with the shoe silent, devices silent live, unknown devices, rejected lines; the least healthy first.
-- param from_day: date  first gaming day of the range (inclusive)
-- param to_day: date  last gaming day of the range (inclusive)
-- param table_id: string = *  the table, e.g. BAC-01; * for every table
-- example: pitwatch query table_health --lake lake --param from_day=2026-11-22 --param to_day=2026-11-28
-- example: pitwatch query table_health --lake lake --param from_day=2026-11-01 --param to_day=2026-11-30 --param table_id=BAC-01

-- hours: per table and gaming day, from its first round's start to its last round's end, summed
-- (the time the table dealt, breaks between rounds included). hands: the seats dealt in each
-- round (rounds.seats_dealt). Silent and unknown devices are findings of the feed-health rules
-- (rules/feed_health.py): SHOE_SILENT (a pack dealt with its shoe silent), UNKNOWN_DEVICE (a
-- device the registry does not list, counted once per device); DEVICE_SILENT is the live
-- service's (the alerts table), counted once per device. Rejected lines whose line names no
-- readable table are on the row whose table_id is empty.

with

rounds_in_range as (
    select * from rounds
    where gaming_day between $from_day and $to_day
      and ($table_id = '*' or table_id = $table_id)
),

findings_in_range as (
    select * from findings
    where gaming_day between $from_day and $to_day
      and ($table_id = '*' or table_id = $table_id)
),

rejects_in_range as (
    select * from rejects
    where gaming_day between $from_day and $to_day
      and ($table_id = '*' or table_id = $table_id)
),

silent_live as (
    select * from alerts
    where gaming_day between $from_day and $to_day
      and ($table_id = '*' or table_id = $table_id)
      and rule_id = 'DEVICE_SILENT'
),

table_days as (
    select
        table_id,
        gaming_day,
        epoch(max(ended) - min(started)) / 3600.0 as hours
    from rounds_in_range
    where started is not null and ended is not null
    group by table_id, gaming_day
),

hours_per_table as (
    select table_id, sum(hours) as hours
    from table_days
    group by table_id
),

rounds_per_table as (
    select
        table_id,
        string_agg(distinct game, ', ' order by game) as games,
        count(distinct gaming_day) as days,
        count(*) as rounds,
        count(*) filter (where voided) as voided_rounds,
        coalesce(sum(len(seats_dealt)), 0) as hands
    from rounds_in_range
    group by table_id
),

findings_per_table as (
    select
        table_id,
        count(*) as findings,
        count(*) filter (where severity = 'critical') as critical,
        count(*) filter (where severity = 'major') as major,
        count(*) filter (where severity = 'minor') as minor,
        count(*) filter (where severity = 'info') as info,
        count(*) filter (where rule_id = 'SHOE_SILENT') as shoe_silent_packs,
        count(distinct device_id) filter (where rule_id = 'UNKNOWN_DEVICE') as unknown_devices
    from findings_in_range
    where table_id is not null
    group by table_id
),

silent_per_table as (
    select table_id, count(distinct device_id) as devices_silent_live
    from silent_live
    where table_id is not null
    group by table_id
),

rejects_per_table as (
    select table_id, count(*) as rejected_lines
    from rejects_in_range
    group by table_id
),

tables_seen as (
    select table_id from rounds_per_table
    union
    select table_id from findings_per_table
    union
    select table_id from silent_per_table
    union
    select table_id from rejects_per_table
),

joined as (
    select
        t.table_id,
        r.games,
        coalesce(r.days, 0) as days,
        coalesce(r.rounds, 0) as rounds,
        coalesce(r.voided_rounds, 0) as voided_rounds,
        coalesce(r.hands, 0) as hands,
        round(h.hours, 2)::double as hours,
        case when h.hours > 0 then round(r.rounds / h.hours, 1)::double end as rounds_per_hour,
        case when h.hours > 0 then round(r.hands / h.hours, 1)::double end as hands_per_hour,
        coalesce(f.findings, 0) as findings,
        coalesce(f.critical, 0) as critical,
        coalesce(f.major, 0) as major,
        coalesce(f.minor, 0) as minor,
        coalesce(f.info, 0) as info,
        coalesce(f.shoe_silent_packs, 0) as shoe_silent_packs,
        coalesce(s.devices_silent_live, 0) as devices_silent_live,
        coalesce(f.unknown_devices, 0) as unknown_devices,
        coalesce(j.rejected_lines, 0) as rejected_lines
    from tables_seen as t
    left join rounds_per_table as r on r.table_id is not distinct from t.table_id
    left join hours_per_table as h on h.table_id is not distinct from t.table_id
    left join findings_per_table as f on f.table_id is not distinct from t.table_id
    left join silent_per_table as s on s.table_id is not distinct from t.table_id
    left join rejects_per_table as j on j.table_id is not distinct from t.table_id
)

select * from joined
order by critical desc, major desc, findings desc, rejected_lines desc, table_id nulls last
