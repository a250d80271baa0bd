-- name: findings_video
-- description: The video to pull for each finding of one gaming day: its table and the window video_from to video_to (the first evidence event's time less video_pad seconds, to the last's plus video_pad), times in UTC, in the table's own time with --local, or in --show-tz ZONE. Every severity by default.
-- param gaming_day: date  the gaming day
-- param severity: string = *  critical, major, minor, info, or * for all
-- param video_pad: int[0..3600] = 30  seconds of video before the first and after the last evidence event (--video-pad)
-- example: pitwatch query findings_video --lake lake --param gaming_day=2026-11-28 --local
-- example: pitwatch query findings_video --lake lake --param gaming_day=2026-11-28 --video-pad 60 --show-tz America/Puerto_Rico

with

day_findings as (
    select * from findings
    where gaming_day = $gaming_day
      and ($severity = '*' or severity = $severity)
)

select
    table_id,
    video_from,
    video_to,
    ts,
    ts_offset,
    rule_id,
    title,
    severity,
    round_id,
    round_use,
    seat,
    dealer_id,
    device_id,
    expected,
    actual,
    finding_id
from (
    select
        *,
        -- a finding written before evidence_from existed: the window around its ts alone
        coalesce(evidence_from, ts) - to_seconds($video_pad) as video_from,
        ts + to_seconds($video_pad) as video_to
    from day_findings
)
order by video_from, table_id, rule_id, finding_id
