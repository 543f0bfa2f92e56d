"""Helpers of the controller compatibility check and the failover/load benchmarks.

`remoting` speaks the RocketMQ remoting protocol to name servers, controller nodes and brokers
(the frame codec comes from ../fake_broker.py); `cluster` starts and stops our name servers with
an embedded or standalone controller and Java 5.3.3 brokers in controller mode; `watch` polls
them every few tens of milliseconds and time-stamps what changes during a failover.
Entry points put tests/compat on sys.path before importing this package.
"""
