microsocks -i 127.0.0.1 -p 35291 
