-- name: review_log
-- description: Every review recorded (pitwatch review), newest first: who decided what about which finding, why (the reason code, its title and error type), the note, video and amount, the finding's rule, table and day, and whether the finding is still in the lake's findings.
-- param since: date = 0001-01-01  the first day (UTC) of reviews to show (default: every review)
-- param reviewer: string = *  the reviewer (--by) to show; * for every reviewer
-- example: pitwatch query review_log --lake lake
-- example: pitwatch query review_log --lake lake --param since=2026-11-28 --param reviewer=M.Ortiz

with

reviews_shown as (
    select * from reviews
    where reviewed_at >= timezone('UTC', $since::timestamp)
      and ($reviewer = '*' or reviewer = $reviewer)
),

reasons as (
    select code, title, error_type from seeds_review_reasons
),

finding_ids as (
    select finding_id from findings
)

select
    r.reviewed_at,
    r.reviewer,
    r.finding_id,
    r.disposition,
    r.reason,
    reasons.title as reason_title,
    reasons.error_type,
    r.note,
    r.video,
    r.amount,
    r.rule_id,
    r.table_id,
    r.gaming_day,
    r.finding_id in (select finding_id from finding_ids) as finding_exists,
    r.review_id
from reviews_shown as r
left join reasons on reasons.code = r.reason
order by r.reviewed_at desc, r.review_id desc
