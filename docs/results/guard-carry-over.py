# What each period measured, by the guard's arm that placed it and how many periods that arm had held
# the threads by then, from `pinlearn run --trace` files (columns period, progress, arm): a placement's
# first periods after a switch, and what the next arm inherits. Usage: python3 THIS TRACE.csv ...
# (docs/bench.md, "What a window carries over").
import csv, statistics as st, sys
from collections import defaultdict

cells = defaultdict(list)
for path in sys.argv[1:]:
    per = {}
    for row in csv.DictReader(open(path)):
        per[int(row['period'])] = (row['arm'], row['progress'])
    periods = sorted(per)
    arms = [per[p][0] for p in periods]
    # Row k measures the period placed by the arm of row k - 1.
    run_start, after = 0, 'start'
    for k in range(1, len(periods)):
        placed_by = arms[k - 1]
        if k - 1 > 0 and arms[k - 1] != arms[k - 2]:
            run_start, after = k - 1, arms[k - 2]
        progress = per[periods[k]][1]
        if placed_by and progress:
            cells[(placed_by, after, k - 1 - run_start)].append(float(progress))

print('| arm | after | ' + ' | '.join(f'period {i + 1}' for i in range(8)) + ' | periods 9+ |')
print('|---|---|' + '---:|' * 9)
for arm, after in sorted({(a, b) for a, b, _ in cells}):
    if after == 'start':
        continue
    row = []
    for i in range(8):
        xs = cells.get((arm, after, i), [])
        row.append(f'{st.mean(xs):.3f} ({len(xs)})' if len(xs) >= 5 else '')
    rest = [x for (a, b, i), xs in cells.items() if (a, b) == (arm, after) and i >= 8 for x in xs]
    row.append(f'{st.mean(rest):.3f} ({len(rest)})' if len(rest) >= 5 else '')
    print(f'| {arm} | {after} | ' + ' | '.join(row) + ' |')
