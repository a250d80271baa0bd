-- name: orphan_reviews
-- description: Reviews whose finding is no longer in the lake's findings (a corrected replay of its day removed it, e.g. after a late file): every such review, by finding, oldest first, with the finding as it was when reviewed (rule, table, day).
-- example: pitwatch query orphan_reviews --lake lake

with

finding_ids as (
    select finding_id from findings
),

orphans as (
    select * from reviews
    where finding_id not in (select finding_id from finding_ids)
)

select
    finding_id,
    rule_id,
    table_id,
    gaming_day,
    reviewed_at,
    reviewer,
    disposition,
    reason,
    note,
    video,
    amount,
    review_id
from orphans
order by gaming_day, table_id, finding_id, reviewed_at, review_id
