module example.com/herald-receiver

go 1.19
