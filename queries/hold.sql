-- name: hold
-- description: Hold against theory per table and dealer (or per table, or per dealer) over a range of gaming days: handle, the casino's actual win and hold %, the theoretical win and hold % from seeds_hold_outcomes, and z, how improbable the difference is (queries/README.md, "Hold against theory"). Voided rounds and stud games are left out; rounds with wagers and no payout event (unsettled_rounds: three_bet_poker's terminal writes none) are counted but left out of win and hold %, which are NULL when no round is settled.
-- param from_day: date  first gaming day of the period (inclusive)
-- param to_day: date  last gaming day of the period (inclusive)
-- param by: string = table_dealer  table_dealer (a row per table and dealer), table, or dealer
-- example: pitwatch query hold --lake lake --param from_day=2026-11-22 --param to_day=2026-11-28 --param by=dealer

with

-- every wager, payout and void of a round, from the terminal's events (casino win = - the payouts, which are net to the player)
round_events as (
    select * from events
    where gaming_day between $from_day and $to_day
      and round_id is not null
      and type in ('round_started', 'bet_placed', 'player_action', 'payout', 'round_voided')
),

rounds_played as (
    select
        table_id,
        gaming_day,
        round_id,
        any_value(game) filter (where type = 'round_started') as game,
        any_value(dealer_id) filter (where type = 'round_started') as dealer_id,
        coalesce(sum(amount) filter (where type in ('bet_placed', 'player_action')), 0) as handle,
        -coalesce(sum(amount) filter (where type = 'payout'), 0) as win,
        -- unsettled: wagers and no payout event at all (every spot settled, a loss included, is a
        -- payout line; three_bet_poker's terminal writes none): its win is unknown, not 0
        bool_or(type = 'bet_placed') and not bool_or(type = 'payout') as unsettled
    from round_events
    group by table_id, gaming_day, round_id
    having bool_or(type = 'round_started')
       and not bool_or(type = 'round_voided')
),

-- stud games: players against each other, the house takes no side of a pot (no hold)
house_rounds as (
    select * from rounds_played
    where game not in ('stud', 'stud8', 'razz')
),

-- the wager on each spot of a round
round_spots as (
    select e.table_id, e.gaming_day, e.round_id, r.game, e.spot, sum(e.amount) as wager
    from round_events as e
    join house_rounds as r using (table_id, gaming_day, round_id)
    where e.type = 'bet_placed'
    group by all
),

-- the casino's win in each outcome the game's theory lists (one outcome settles every spot of the round)
outcome_wins as (
    select
        s.table_id, s.gaming_day, s.round_id, o.outcome,
        any_value(o.probability) as probability,
        -sum(s.wager * o.net) as casino_win
    from round_spots as s
    join seeds_hold_outcomes as o on o.game = s.game and o.spot = s.spot
    group by all
),

-- the round's expected casino win and its variance over the outcomes (exact: one outcome settles every spot)
theory as (
    select
        w.table_id, w.gaming_day, w.round_id,
        sum(w.probability * w.casino_win) as theo_win,
        sum(w.probability * w.casino_win * w.casino_win)
            - sum(w.probability * w.casino_win) * sum(w.probability * w.casino_win) as variance
    from outcome_wins as w
    group by all
),

-- a round has a theory only when every spot it took is priced for its game (seeds_hold_outcomes
-- lists every outcome for every spot it prices)
priced_spots as (
    select s.table_id, s.gaming_day, s.round_id,
           count(*) as spots,
           count(o.spot) as priced
    from round_spots as s
    left join (select distinct game, spot from seeds_hold_outcomes) as o on o.game = s.game and o.spot = s.spot
    group by all
),

per_round as (
    select
        r.*,
        -- priced: the game has a theory and every spot taken is in it (a round without a bet: 0, exactly)
        -- an unsettled round has no win to set against its theory: never priced
        case when not r.unsettled and r.game in (select game from seeds_hold_outcomes)
                  and coalesce(p.spots, 0) = coalesce(p.priced, 0)
             then coalesce(t.theo_win, 0) end as theo_win,
        case when not r.unsettled and r.game in (select game from seeds_hold_outcomes)
                  and coalesce(p.spots, 0) = coalesce(p.priced, 0)
             then coalesce(t.variance, 0) end as variance
    from house_rounds as r
    left join priced_spots as p using (table_id, gaming_day, round_id)
    left join theory as t using (table_id, gaming_day, round_id)
),

grouped as (
    select
        case when $by in ('table_dealer', 'table') then table_id end as table_id,
        case when count(distinct game) = 1 then any_value(game) else 'mixed' end as game,
        case when $by in ('table_dealer', 'dealer') then dealer_id end as dealer_id,
        count(*) as rounds,
        count(*) filter (where unsettled) as unsettled_rounds,
        sum(handle) as handle,
        -- win and hold of the settled rounds only; NULL (unknown) when no round is settled
        sum(win) filter (where not unsettled) as win,
        sum(handle) filter (where not unsettled) as settled_handle,
        count(theo_win) as priced_rounds,
        sum(handle) filter (where theo_win is not null) as priced_handle,
        sum(win) filter (where theo_win is not null) as priced_win,
        sum(theo_win) as theo_win,
        sum(variance) as variance
    from per_round
    group by 1, 3
),

-- a grouping that is not one of the three is an error even over days without a round
checked as (
    select case when $by in ('table_dealer', 'table', 'dealer') then true
                else error('parameter by: ' || $by || ' is not table_dealer, table or dealer') end as ok
)

-- money (handle, win, theo_win, sd) as DECIMAL(18, 2): shown as 1457075.00, never 1.45708e+06
select
    table_id,
    game,
    dealer_id,
    (select name from seeds_dealers where id = grouped.dealer_id) as dealer_name,
    rounds,
    unsettled_rounds,
    handle::decimal(18, 2) as handle,
    win::decimal(18, 2) as win,
    case when settled_handle > 0 then round(100.0 * win / settled_handle, 3)::double end as hold_pct,
    priced_rounds,
    theo_win::decimal(18, 2) as theo_win,
    case when priced_handle > 0 then round(100.0 * theo_win / priced_handle, 3)::double end as theo_hold_pct,
    case when variance > 0 then sqrt(variance)::decimal(18, 2) end as sd,
    case when variance > 0 then round((priced_win - theo_win) / sqrt(variance), 2)::double end as z
from checked
join grouped on checked.ok
order by z nulls last, table_id, dealer_id
