# The connection layer of sluiced under attack (tests/integration/conn_test.py):
# output bounds for clients that pipeline without reading, request and command
# timeouts, the file-descriptor limit, draining on SIGTERM. Real sluiced, raw
# sockets. Also run under TSan (label concurrency): the process-wide output
# total is shared by the workers.
sluiced_test(conn_integration conn_test.py LABELS integration concurrency TIMEOUT 300)

# The same layer on a loop the test steps by hand (tests/unit/test_conn.c):
# exact moments, such as a request unread in the socket buffer when the drain starts.
sluice_unit_test(test_conn)
