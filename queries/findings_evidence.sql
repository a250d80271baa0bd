-- name: findings_evidence
-- description: The findings of one gaming day with their evidence: one row per cited event (joined from events by device_id and event_id: an event_id is unique only within its device), in the order the finding cites them. Critical findings by default.
-- param gaming_day: date  the gaming day
-- param severity: string = critical  critical, major, minor, info, or * for all
-- param video_pad: int[0..3600] = 30  seconds of video before the first and after the last evidence event (--video-pad)
-- example: pitwatch query findings_evidence --lake lake --param gaming_day=2026-11-28
-- example: pitwatch query findings_evidence --lake lake --param gaming_day=2026-11-28 --param severity=major --format csv

with

day_findings as (
    select * from findings
    where gaming_day = $gaming_day
      and ($severity = '*' or severity = $severity)
),

citations as (
    select
        finding_id,
        unnest(evidence).device_id as device_id,
        unnest(evidence).event_id as event_id,
        generate_subscripts(evidence, 1) as evidence_no
    from day_findings
),

cited_events as (
    select * from events
    where (device_id, event_id) in (select (device_id, event_id) from citations)
)

select
    f.finding_id,
    f.rule_id,
    f.severity,
    f.table_id,
    f.pack_id,
    f.round_id,
    -- which use of an id used again (events.md 2.1): 1 for the first, null in rows written before them
    f.pack_use,
    f.round_use,
    f.dealer_id,
    (select name from seeds_dealers where id = f.dealer_id) as dealer_name,
    f.expected,
    f.actual,
    c.evidence_no,
    c.event_id,
    e.ts as event_ts,
    e.source,
    c.device_id,
    e.seq,
    e.type,
    e.target,
    e.face,
    e.card,
    e."index",
    e.file,
    e.line,
    -- the table's own time (--local shows every time of the row in the finding's offset) and the video to pull
    f.ts_offset,
    coalesce(f.evidence_from, f.ts) - to_seconds($video_pad) as video_from,
    f.ts + to_seconds($video_pad) as video_to
from day_findings as f
join citations as c using (finding_id)
left join cited_events as e on e.device_id = c.device_id and e.event_id = c.event_id
order by f.ts, f.table_id, f.rule_id, f.finding_id, c.evidence_no
