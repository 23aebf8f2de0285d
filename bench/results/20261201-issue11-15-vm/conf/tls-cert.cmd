openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout tls-key.pem -out tls-cert.pem -days 7 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1
