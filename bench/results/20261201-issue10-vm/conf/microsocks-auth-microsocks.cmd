microsocks -i 127.0.0.1 -p 51433 -u bench -P bench
