# psycopg 3 through the gateway's pooled endpoint, preparing every statement on the server
# (prepare_threshold=0: named statements _pg3_N). Prints one JSON line.
import json, sys

import psycopg

conninfo = sys.argv[1]
connections = [psycopg.connect(conninfo, prepare_threshold=0, autocommit=True) for _ in range(3)]
names = []
for round_ in range(5):
    names.append([conn.execute('select name from items where id = %s', (i + round_ + 1,)).fetchone()[0] for i, conn in enumerate(connections)])
with connections[1].transaction() as transaction:
    connections[1].execute('update items set name = %s where id = %s', ('changed', 1))
    inside = connections[1].execute('select name from items where id = %s', (1,)).fetchone()[0]
    raise psycopg.Rollback(transaction)
after = connections[2].execute('select name from items where id = %s', (1,)).fetchone()[0]
for conn in connections:
    conn.close()
print(json.dumps({'names': names, 'inside': inside, 'after': after}))
